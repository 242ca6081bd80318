import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The version in the nearest package.json above a module (`import.meta.url`):
 * dist/main.js, dist/bundle/boxmaker.js and the sources all find their
 * package's own file.
 */
export function packageVersion(moduleUrl: string): string {
  let dir = dirname(fileURLToPath(moduleUrl));
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
