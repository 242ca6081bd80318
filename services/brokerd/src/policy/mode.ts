import type { PermissionMode } from "@boxmaker/common";
import type { Risk } from "../config-types.js";
import type { Decision } from "./rules.js";

/** What a mode looks at besides the policy's decision. */
export interface ModeFacts {
  tool: string;
  risk: Risk;
  /**
   * Whether brokerd itself holds what the call does: its own file tools and
   * fetch_url, or a command inside bwrap. An MCP tool acts through another
   * program, and an unsandboxed command as brokerd's user, so neither is.
   */
  contained: boolean;
}

/** The rule a read-only refusal names; the model reads it as "plan mode". */
export const READ_ONLY_RULE = "mode:read-only";

/**
 * The policy's decision under a session's permission mode, pure. A mode only
 * ever tightens (read-only refuses what is not a read) or answers a question
 * the policy would have put to a person (auto-edit, auto): a deny stays a
 * deny, and a reviewed path (`protected:…`) stays with a person in every mode
 * that writes at all.
 * Protected paths never get here: planning refuses them.
 */
export function underMode(mode: PermissionMode, d: Decision, f: ModeFacts): Decision {
  if (d.effect === "deny") return d;
  // find_tool only reads the tool table; call_tool is judged by what it calls.
  if (mode === "read-only")
    return f.risk === "read" || f.tool === "find_tool" ? d : { effect: "deny", rule: READ_ONLY_RULE };
  if (d.rule.startsWith("protected:")) return d;
  switch (mode) {
    case "ask":
      return d;
    case "auto-edit":
      return d.effect === "ask" && f.risk === "write" && f.contained ? { effect: "allow", rule: "mode:auto-edit" } : d;
    case "auto":
      return d.effect === "ask" && f.contained ? { effect: "allow", rule: "mode:auto" } : d;
  }
}
