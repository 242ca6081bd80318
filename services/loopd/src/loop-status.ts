import {
  toRpcError,
  type BrokerService,
  type ClientOf,
  type InferService,
  type LoopStatusResponseSchema,
} from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LoopdConfig } from "./config.js";
import { diskUsage } from "./disk-usage.js";
import type { SessionRoleName } from "./sessions/session-log.js";
import type { SessionRunner } from "./loop/session-runner.js";
import type { LogRetention } from "./sessions/log-compression.js";
import type { SessionStore } from "./sessions/session-store.js";

/** What loopd's Status reports from: its own state, its peers, and the facts of its config it states. */
export interface StatusDeps {
  runner: SessionRunner;
  store: SessionStore;
  infer: ClientOf<typeof InferService>;
  broker: ClientOf<typeof BrokerService>;
  sockets: { loopd: string; inferproxy: string; brokerd: string };
  /** Where the session logs are and when they are compressed, for the disk usage `status` shows. */
  sessionsDir: string;
  sessionLogs: LogRetention;
  /** The turn budgets and per-request max_tokens, for `doctor` to state at the server's speed. */
  budgets: LoopdConfig["budgets"];
  maxTokensPerRequest: number;
}

/** loopd's Status: each daemon's health, the slots, the disk, and what a new session would send. */
export async function loopStatus(
  d: StatusDeps,
  signal: AbortSignal,
): Promise<MessageInitShape<typeof LoopStatusResponseSchema>> {
  const probe = async <T>(name: string, socket: string, call: () => Promise<T>) => {
    try {
      return { value: await call(), health: { name, socket, reachable: true, message: "ok" } };
    } catch (err) {
      return { value: undefined, health: { name, socket, reachable: false, message: toRpcError(err).message } };
    }
  };
  // A daemon that is down is reported as down now, not waited for.
  const opts = { signal, timeoutMs: 3_000, waitForReady: false };
  const [infer, broker, disk] = await Promise.all([
    probe("inferproxy", d.sockets.inferproxy, () => d.infer.status({}, opts)),
    probe("brokerd", d.sockets.brokerd, () => d.broker.brokerStatus({}, opts)),
    diskUsage({ dir: d.sessionsDir, archived: archivedOf(d.store), retention: d.sessionLogs }, d.infer, d.broker, opts),
  ]);
  const cfgSlots = Object.entries(d.runner.slotMap) as [SessionRoleName, number][];
  const selfTest = infer.value?.selfTest;
  const baselinePrompt = await d.runner.baseline.report(selfTest?.ran ? Number(selfTest.checkedAtUnixMs) : 0, signal);
  return {
    daemons: [{ name: "loopd", socket: d.sockets.loopd, reachable: true, message: "ok" }, infer.health, broker.health],
    infer: infer.value,
    broker: broker.value,
    slots: cfgSlots.map(([role, slot]) => ({
      slot,
      role,
      runningSession: d.runner.slots.holder(slot) ?? "",
      runningMode: d.store.get(d.runner.slots.holder(slot) ?? "")?.state.mode ?? "",
      queuedSessions: d.runner.slots.waiting(slot),
      cachedSession: d.runner.parking.occupantOf(slot) ?? "",
    })),
    sessions: d.store.count(),
    instructionsFile: d.runner.instructionsFile(),
    disk,
    cacheHealth: d.runner.cacheHealth.ofServer(),
    slotMapProblem: d.runner.slotMapProblem(),
    budgets: {
      maxIterations: d.budgets.max_iterations,
      maxTotalTokens: d.budgets.max_total_tokens,
      maxWallMs: d.budgets.max_wall_ms,
      maxThinkingTokens: d.budgets.max_thinking_tokens,
    },
    maxTokensPerRequest: d.maxTokensPerRequest,
    baselinePrompt,
  };
}

/** Which sessions are archived, as one lookup for a status (every summary once, not per log file). */
function archivedOf(store: SessionStore): (id: string) => boolean | undefined {
  const archived = new Map(store.summaries().map((e) => [e.summary.id, e.summary.archived]));
  return (id) => archived.get(id);
}
