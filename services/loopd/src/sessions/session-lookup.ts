import { invalidArgument } from "@boxmaker/common";

/**
 * The one full id of the session a person typed (`typed`, an id or a unique
 * prefix of one), from the ids it may mean; undefined when it means none.
 * Ambiguous says so in one line, with what to do.
 */
export function oneSessionId(typed: string, ids: readonly string[]): string | undefined {
  if (ids.length > 1) {
    const some = ids.slice(0, 3).join(", ");
    throw invalidArgument(
      `"${typed}" matches ${ids.length} sessions (${some}${ids.length > 3 ? ", …" : ""}); give more of the id`,
    );
  }
  return ids[0];
}
