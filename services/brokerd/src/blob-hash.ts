import { createHash } from "node:crypto";

/** How a blob is named to the model: this prefix and the sha256 of its text in hex. */
export const BLOB_PREFIX = "blob:sha256:";
/** A blob's hash as stored: the file's name and what pins.json lists. */
export const BLOB_HASH = /^[0-9a-f]{64}$/;

export const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
