import { Type } from "@boxmaker/common";

/** Building blocks the parts of brokerd's config schema (config.ts and the sub-schemas it composes) share. */
export const strings = (options = {}) => Type.Array(Type.String(), options);
export const positive = (def: number) => Type.Integer({ minimum: 1, default: def });
