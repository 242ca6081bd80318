import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The built daemons sit next to the CLI in the same tree (a checkout after
 * `npm run build`, or the Nix package's lib/boxmaker): this file is
 * services/cli/dist/supervisor/install-paths.js.
 */
export const installRoot = fileURLToPath(new URL("../../../../", import.meta.url));

export type DaemonName = "inferproxy" | "brokerd" | "loopd";

export const daemonMain = (name: DaemonName): string => join(installRoot, "services", name, "dist", "main.js");
export const llamaSimMain = join(installRoot, "test", "llama-sim", "dist", "main.js");

export function missingBuilds(paths: readonly string[]): string[] {
  return paths.filter((p) => !existsSync(p));
}
