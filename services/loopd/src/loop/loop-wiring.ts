import {
  LOOP_TOOL,
  messageOf,
  type BrokerService,
  type ClientOf,
  type FinalMessage,
  type InferService,
  type Logger,
} from "@boxmaker/common";
import type { LoopDeps } from "./agent-loop.js";
import type { LoopdConfig } from "../config.js";
import type { Parking } from "../slots/parking.js";
import type { Session } from "../sessions/session.js";
import { withdrawProposal, type ApprovalWaits } from "./approvals.js";
import type { Compactor } from "../compaction/compaction.js";
import type { SessionBlobs } from "../session-blobs.js";
import type { HookEvents } from "../hook-events.js";
import { runUpdatePlan } from "./plan-tool.js";
import { questionRelay } from "./question-relay.js";
import type { CacheHealth } from "../slots/cache-health.js";
import { spawnAgent, type SubagentHost } from "./subagent-spawn.js";

/** The runner's long-lived parts a turn's loop is wired to. */
export interface LoopWiring {
  infer: ClientOf<typeof InferService>;
  broker: ClientOf<typeof BrokerService>;
  log: Logger;
  config: LoopdConfig;
  subagents: SubagentHost;
  hookEvents: HookEvents;
  approvals: ApprovalWaits;
  compactor: Compactor;
  blobs: SessionBlobs;
  parking: Parking;
  cacheHealth: CacheHealth;
  /** A session by its full id, if loopd holds it (a subagent's questions reach its parent's watchers). */
  sessionOf: (id: string) => Session | undefined;
}

/**
 * What every turn's loop (agent-loop.ts) is given: loopd's own tools, the
 * wait for an approval, compaction before a request and after a refusal, the
 * inbound pre-pass, and what each answer's timings feed.
 */
export function loopDepsFor(w: LoopWiring): LoopDeps {
  return {
    infer: w.infer,
    broker: w.broker,
    log: w.log,
    maxTokens: w.config.max_tokens,
    serverWaitMs: w.config.server_wait_ms,
    localTools: {
      [LOOP_TOOL.spawnAgent]: (args, parent, signal) => spawnAgent(w.subagents, args, parent, signal),
      [LOOP_TOOL.updatePlan]: (args, s, _signal, callId) => runUpdatePlan(args, s, callId),
    },
    awaitDecision: async (id, signal, sessionId) => {
      w.hookEvents.notify(sessionId, "approval_waiting", `session ${sessionId}: proposal ${id} waits for approval`);
      try {
        return await w.approvals.wait(id, signal);
      } catch (err) {
        if (!signal.aborted) throw err;
        // Nobody waits for it any more: approving it later would apply a change the model never learns of.
        return withdrawProposal(w.broker, w.log, id, messageOf(signal.reason));
      }
    },
    relayQuestions: questionRelay(w.broker, w.log, w.sessionOf),
    beforeRequest: async (s, signal) => {
      await w.compactor.maybeCompact(s, signal);
    },
    recoverOverflow: async (s, signal) => !!(await w.compactor.recover(s, signal)),
    prepass: (s, text, signal) =>
      w.config.prepass.enabled
        ? w.blobs.spill(s, text, w.config.prepass.threshold_bytes, signal)
        : Promise.resolve({ text, blocks: [] }),
    afterResponse: (s, final) => {
      w.parking.verify(s.id, final);
      noteCacheHealth(w.cacheHealth, w.log, s, final);
    },
  };
}

/** Feeds cache health; the one warning when reuse fell goes to the session's watchers and the log. */
function noteCacheHealth(cacheHealth: CacheHealth, log: Logger, s: Session, final: FinalMessage): void {
  const t = final.timings;
  const w = cacheHealth.record({
    sessionId: s.id,
    slot: s.state.slot,
    epoch: s.state.epoch.epoch,
    cacheN: t?.cacheN ?? 0,
    promptN: t?.promptN ?? 0,
    predictedN: t?.predictedN ?? 0,
    templateWarning: final.templateWarning,
  });
  if (!w) return;
  log.warn({ session: s.id, cause: w.cause, ratio: w.ratio }, w.message);
  s.events.publish({ case: "cacheWarning", value: w });
}
