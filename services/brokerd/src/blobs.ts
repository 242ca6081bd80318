import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolError } from "./tool-table.js";

export const BLOB_PREFIX = "blob:sha256:";
const HEX = /^[0-9a-f]{64}$/;

export const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** Content-addressed store: a result is kept whole, once, under its sha256. */
export class BlobStore {
  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true, mode: 0o750 });
  }

  private pathOf(hash: string): string {
    return join(this.dir, hash.slice(0, 2), hash);
  }

  put(text: string): string {
    const hash = sha256(text);
    const p = this.pathOf(hash);
    try {
      statSync(p);
      return hash;
    } catch {
      mkdirSync(join(this.dir, hash.slice(0, 2)), { recursive: true, mode: 0o750 });
      const tmp = `${p}.${process.pid}.tmp`;
      writeFileSync(tmp, text, { mode: 0o640 });
      renameSync(tmp, p);
      return hash;
    }
  }

  /** Accepts `blob:sha256:<hex>` or the bare hex; anything else is the model's mistake. */
  static parseRef(ref: string): string {
    const hex = ref.trim().startsWith(BLOB_PREFIX) ? ref.trim().slice(BLOB_PREFIX.length) : ref.trim();
    if (!HEX.test(hex)) throw new ToolError(`"${ref}" is not a blob reference; it looks like ${BLOB_PREFIX}<64 hex digits>`);
    return hex;
  }

  get(ref: string): string {
    const hash = BlobStore.parseRef(ref);
    try {
      return readFileSync(this.pathOf(hash), "utf8");
    } catch {
      throw new ToolError(`no blob ${BLOB_PREFIX}${hash} is stored`);
    }
  }
}
