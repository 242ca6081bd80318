/** Stands for a shell word whose value is only known at run time. */
export const DYNAMIC = "\u0000dynamic";
