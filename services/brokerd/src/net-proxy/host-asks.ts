import type { PolicyRule } from "../config-types.js";
import type { NetworkAsk, ProposalRecord, ProposalStore, ProposalSummary } from "../staging.js";
import { connectionDecision } from "./allow.js";

/** The call a command runs for: whose person is asked, and which call the proposal came from. */
export interface CallScope {
  session: string;
  callId: string;
}

/**
 * A session holds at most this many network proposals waiting at once: a command that
 * names ten thousand hosts under an ask rule puts a few before the person, not a flood.
 */
export const MAX_PENDING_HOSTS = 8;

export type ConnectionVerdict =
  | { effect: "allow"; rule: string; proposal?: string }
  | { effect: "deny"; rule: string; why: string; proposal?: string }
  /** Ask with nothing decided yet for this host:port in this session: a proposal is to be staged. */
  | { effect: "stage"; rule: string };

const sameTarget = (p: ProposalSummary, session: string, host: string, port: number) =>
  p.network !== undefined && p.session_id === session && p.network.host === host && p.network.port === port;

/**
 * Whether a connection may go ahead, pure: the host rules first (a deny wins over any
 * grant, an allow needs none), then for ask what the session's person said about this
 * host:port. A grant is an applied network proposal; a rejection stands for the rest of
 * the session (asking again after every refusal would let a command nag); a pending one
 * is named again instead of staging another. Without a session (a hook's command) nobody
 * can be asked.
 */
export function connectionVerdict(
  rules: readonly PolicyRule[],
  target: { host: string; port: number; command: string },
  scope: CallScope | undefined,
  proposals: readonly ProposalSummary[],
): ConnectionVerdict {
  const { host, port } = target;
  const d = connectionDecision(rules, host, target.command);
  const where = `${host}:${port}`;
  if (d.effect === "deny") return { effect: "deny", rule: d.rule, why: `${where} is not allowed for this command` };
  if (d.effect === "allow") return { effect: "allow", rule: d.rule };
  if (!scope)
    return {
      effect: "deny",
      rule: d.rule,
      why: `${host} needs a person's approval, and this command runs for no session a person could be asked in`,
    };
  const mine = proposals.filter((p) => sameTarget(p, scope.session, host, port));
  const granted = mine.find((p) => p.state === "applied");
  if (granted) return { effect: "allow", rule: `grant:${granted.id}`, proposal: granted.id };
  const rejected = mine.find((p) => p.state === "rejected");
  if (rejected)
    return {
      effect: "deny",
      rule: d.rule,
      proposal: rejected.id,
      why: `a person refused ${where} for this session (proposal ${rejected.id}); do not retry it, an operator can allow the host with a rule`,
    };
  const pending = mine.find((p) => p.state === "pending");
  if (pending)
    return { effect: "deny", rule: d.rule, proposal: pending.id, why: waitingText(where, pending.id, "still waits") };
  const waiting = proposals.filter((p) => p.network && p.session_id === scope.session && p.state === "pending");
  if (waiting.length >= MAX_PENDING_HOSTS)
    return {
      effect: "deny",
      rule: "net:ask-limit",
      why: `${host} needs a person's approval, and ${waiting.length} hosts already wait for one in this session (${waiting.map((p) => p.id).join(", ")})`,
    };
  return { effect: "stage", rule: d.rule };
}

export function waitingText(where: string, id: string, verb = "was staged"): string {
  return (
    `${where} needs a person's approval: proposal ${id} ${verb} for it. ` +
    `Once approved, ${where} is allowed for this session's commands; re-run the command then`
  );
}

/** The first line is what `boxmaker proposals` shows; the command is the model's text, cut short. */
function networkPreview(a: NetworkAsk): string {
  const cmd = a.command.replace(/\s+/g, " ").trim();
  const short = cmd.length > 60 ? `${cmd.slice(0, 59)}…` : cmd;
  return [
    `network: ${a.host}:${a.port} for \`${short}\``,
    "",
    `The command's connection to ${a.host}:${a.port} was refused. Approving allows ${a.host}:${a.port}`,
    "for this session's commands from now on (the model re-runs the command); rejecting keeps it refused",
    "for this session. A deny rule, and the refusal of private addresses, still apply.",
    "",
    `$ ${a.command}`,
  ].join("\n");
}

/** The proposal store as the proxy sees it: read a session's network proposals, stage one. Without a store nobody is asked. */
export class HostAsks {
  constructor(
    private readonly rules: readonly PolicyRule[],
    private readonly proposals?: ProposalStore,
  ) {}

  verdict(target: NetworkAsk, scope: CallScope | undefined): ConnectionVerdict {
    if (!this.proposals || !scope) return connectionVerdict(this.rules, target, undefined, []);
    const mine = this.proposals.summaries(scope.session);
    return connectionVerdict(this.rules, target, scope, mine);
  }

  /** Only after a verdict of "stage", which needs a store and a scope. */
  stage(target: NetworkAsk, scope: CallScope, rule: string): ProposalRecord {
    if (!this.proposals) throw new Error("a network ask was staged without a proposal store");
    return this.proposals.stage({
      session_id: scope.session,
      call_id: scope.callId,
      tool: "network",
      arguments_json: JSON.stringify(target),
      preview: networkPreview(target),
      rule,
      checks: {},
      network: target,
    });
  }
}
