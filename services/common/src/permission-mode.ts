/**
 * A session's permission mode: how much of what the policy would ask a person
 * about is decided without one. It is a policy input, evaluated by brokerd on
 * every call; deny rules and protected paths hold in every mode. The names are
 * the wire's, the log's and the CLI's alike.
 */
export const PERMISSION_MODES = ["read-only", "ask", "auto-edit", "auto"] as const;

export type PermissionMode = (typeof PERMISSION_MODES)[number];

/** The mode of a session that never set one, and of a call that names none. */
export const DEFAULT_MODE: PermissionMode = "ask";

/** `plan` is the common name for read-only (other agents call it that). */
const ALIASES: Record<string, PermissionMode> = { plan: "read-only" };

/** The mode a person or a peer named, or undefined for a word that is not one. */
export function parseMode(raw: string): PermissionMode | undefined {
  const w = raw.trim().toLowerCase();
  if ((PERMISSION_MODES as readonly string[]).includes(w)) return w as PermissionMode;
  return ALIASES[w];
}
