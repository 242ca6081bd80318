import { packageVersion } from "@boxmaker/common/lite";

/** The CLI's version: the nearest package.json above this file (services/cli/package.json). */
export function cliVersion(from: string = import.meta.url): string {
  return packageVersion(from);
}
