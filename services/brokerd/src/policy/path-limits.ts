/** Longest path and deepest nesting accepted (also the bounds of fs-walk.ts). */
export const MAX_INPUT_BYTES = 4096;
export const MAX_INPUT_DEPTH = 128;
