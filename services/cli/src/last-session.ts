import type { LoopClient } from "./connection.js";
import { UsageError } from "./errors.js";

/**
 * The session `-c` continues: the most recently active main session of the
 * stack this CLI talks to that is not archived (a subagent's or a schedule's
 * session is not one a person was typing into). None is a usage error that
 * says how to start one.
 */
export async function lastSessionId(client: LoopClient): Promise<string> {
  const { SessionRole } = await import("@boxmaker/common/client");
  // Most recent first; a few pages' worth is plenty to find the last main session among subagents.
  const { sessions } = await client.listSessions({ limit: 50 });
  const main = sessions.find((s) => s.role === SessionRole.MAIN && !s.parentId && s.state !== "archived");
  if (!main) throw new UsageError("no session to continue: `boxmaker chat` or `boxmaker run PROMPT` starts one");
  return main.id;
}
