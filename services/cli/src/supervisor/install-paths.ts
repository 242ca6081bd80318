import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The built daemons sit next to the CLI in the same tree (a checkout after
 * `npm run build`, or the Nix package's lib/boxmaker). Found by walking up
 * from this file, which may be tsc's output or the bundled CLI.
 */
export const installRoot = findInstallRoot(dirname(fileURLToPath(import.meta.url)));

function findInstallRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "services", "loopd", "package.json"))) return dir;
    if (dirname(dir) === dir) return join(from, "..", "..", "..", "..");
  }
}

export type DaemonName = "inferproxy" | "brokerd" | "loopd";

export const daemonMain = (name: DaemonName): string => join(installRoot, "services", name, "dist", "main.js");
export const llamaSimMain = join(installRoot, "test", "llama-sim", "dist", "main.js");

export function missingBuilds(paths: readonly string[]): string[] {
  return paths.filter((p) => !existsSync(p));
}
