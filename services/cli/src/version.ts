import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The CLI's version: the nearest package.json above this file (the bundle in
 * dist/bundle/ and the compiled dist/ both find services/cli/package.json).
 */
export function cliVersion(from: string = import.meta.url): string {
  let dir = dirname(fileURLToPath(from));
  for (let i = 0; i < 5; i++, dir = dirname(dir)) {
    try {
      const v = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version?: unknown }).version;
      if (typeof v === "string") return v;
    } catch {
      // not here: one level up
    }
  }
  return "unknown";
}
