import {
  invalidArgument,
  notFound,
  parseMode,
  PERMISSION_MODES,
  type PermissionMode,
  type ImplOf,
  type LoopService,
} from "@boxmaker/common";
import { lateDecisionNote } from "./loop/approvals.js";
import type { SessionSummary } from "./sessions/session-index.js";
import type { Schedules } from "./schedules.js";
import { loopStatus, type StatusDeps } from "./loop-status.js";
import { planOf } from "./loop/plan-tool.js";
import { historyMessage, roleName, scheduleInfo, sessionInfo, summaryInfo } from "./wire.js";

export interface LoopServiceDeps extends StatusDeps {
  schedules: Schedules;
}

/**
 * What one call may carry, checked before loopd does any work on it: each is
 * handled on loopd's one thread, and these were the inputs that held it (a
 * 30 MB message 1.6 s in the pre-pass, a 10 MB schedule prompt 0.6 s in
 * its JSON file, a 1 MB title in every listing). A title is one line `ls`
 * shows, so a longer one is cut rather than refused.
 */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
const MAX_SCHEDULE_PROMPT_BYTES = 64 * 1024;
const MAX_CRON_CHARS = 256;
const MAX_TITLE_CHARS = 200;

function sessionTitle(raw: string): string {
  const t = raw
    .slice(0, MAX_TITLE_CHARS * 4)
    .replace(/\s+/g, " ")
    .trim();
  return t.length > MAX_TITLE_CHARS ? `${t.slice(0, MAX_TITLE_CHARS - 1)}…` : t;
}

const MODE_FOR_MODEL: Record<PermissionMode, string> = {
  "read-only":
    "plan mode. Only reads and find_tool run; writes and commands are refused. Investigate and describe the changes you would make instead of making them.",
  ask: "writes and commands wait for the user's approval.",
  "auto-edit": "file writes are applied without asking; commands still wait for approval.",
  auto: "what the policy does not deny runs without asking (commands in the sandbox).",
};

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;

/** Maps LoopService calls onto the runner and store. */
export function loopService(d: LoopServiceDeps): ImplOf<typeof LoopService> {
  const { runner, store } = d;
  return {
    async createSession(req) {
      // A parent is a session that exists: a made-up one would be listed as a child of nothing.
      if (req.parentId && !store.get(req.parentId)) throw notFound(`no session ${req.parentId} to be the parent`);
      const s = await runner.create(roleName(req.role), sessionTitle(req.title), req.parentId);
      return sessionInfo(s);
    },

    async *send(req, ctx) {
      const s = runner.get(req.sessionId);
      const bytes = req.text.length > MAX_MESSAGE_BYTES / 3 ? Buffer.byteLength(req.text) : 0;
      if (bytes > MAX_MESSAGE_BYTES) {
        throw invalidArgument(
          `the message is ${mib(bytes)}; loopd takes at most ${mib(MAX_MESSAGE_BYTES)} in one message: ` +
            "put the text in a file in the workspace and ask for it to be read",
        );
      }
      // Subscribe before starting so not even the first event can be missed.
      const events = s.events.subscribe(s.events.lastSeq, ctx.signal, true);
      const b = req.budgets;
      runner
        .start(
          s.id,
          req.text,
          b && {
            max_iterations: b.maxIterations,
            max_total_tokens: b.maxTotalTokens,
            max_wall_ms: b.maxWallMs,
            max_thinking_tokens: b.maxThinkingTokens,
          },
        )
        .catch(() => undefined); // reported as a turn_failed event
      yield* events;
    },

    async *follow(req, ctx) {
      const s = runner.get(req.sessionId);
      yield* s.events.subscribe(Number(req.afterSeq), ctx.signal, false);
    },

    async listSessions(req) {
      const include = (s: SessionSummary) => req.includeArchived || !s.archived;
      if (req.limit) {
        const { shown, total } = store.mostRecent(req.limit, include);
        return { sessions: shown.map((e) => summaryInfo(e.summary, e.live)), total };
      }
      const matching = store.summaries().filter((e) => include(e.summary));
      return { sessions: matching.map((e) => summaryInfo(e.summary, e.live)), total: matching.length };
    },

    async getSession(req) {
      const s = runner.get(req.id);
      return {
        session: { ...sessionInfo(s), cacheHealth: runner.cacheHealth.ofSession(s.id) },
        messages: s.state.history.filter((m) => !m.carried).map(historyMessage),
        plan: planOf(s.state.history),
      };
    },

    async cancelTurn(req) {
      return { cancelled: runner.cancel(req.sessionId) };
    },

    async archiveSession(req) {
      const s = runner.get(req.id);
      if (s.running) throw invalidArgument(`session ${s.id} is running a turn; cancel it first`);
      s.recordArchived();
      runner.blobs.pin(s); // an archived session pins nothing
      await runner.parking.forget(s.id); // nor keeps a parked cache
      return sessionInfo(s);
    },

    async deleteSession(req) {
      const s = runner.get(req.id);
      if (s.running) throw invalidArgument(`session ${s.id} is running a turn; cancel it first`);
      const deleted = store.delete(s.id);
      if (deleted) {
        runner.blobs.release(s.id);
        await runner.parking.forget(s.id);
      }
      return { deleted };
    },

    async renameSession(req) {
      const s = runner.get(req.id);
      const title = sessionTitle(req.title);
      if (!title) throw invalidArgument("a session title cannot be empty");
      s.recordRenamed(title);
      return sessionInfo(s);
    },

    async setSessionMode(req) {
      const s = runner.get(req.sessionId);
      const mode = parseMode(req.mode);
      if (!mode) throw invalidArgument(`"${req.mode.slice(0, 40)}" is not a mode: ${PERMISSION_MODES.join(", ")}`);
      if (s.state.archived) throw invalidArgument(`session ${s.id} is archived`);
      // Applies from the next tool call, also inside a running turn; a call already staged keeps its decision.
      const previous = s.recordMode(mode);
      if (previous !== mode) {
        // The model learns it with its next message: a model in plan mode should plan, not try writes.
        s.recordNote(`The user set this session's permission mode to ${mode}: ${MODE_FOR_MODEL[mode]}`);
        s.events.publish({ case: "modeChanged", value: { mode, previous } });
      }
      // A subagent running for this session's turn is part of it: it switches too.
      for (const child of store.list()) if (child.running && child.state.parentId === s.id) child.recordMode(mode);
      return sessionInfo(s);
    },

    // brokerd knows sessions by their full id: a prefix the person typed is resolved here first.
    listProposals: (req, ctx) =>
      d.broker.listProposals(req.sessionId ? { ...req, sessionId: runner.get(req.sessionId).id } : req, {
        signal: ctx.signal,
      }),

    listChanges: (req, ctx) => {
      const s = runner.get(req.sessionId);
      return d.broker.listChanges({ ...req, sessionId: s.id }, { signal: ctx.signal });
    },

    async undoChanges(req, ctx) {
      const s = runner.get(req.sessionId);
      const res = await d.broker.undoChanges({ ...req, sessionId: s.id }, { signal: ctx.signal });
      const undone = res.results.filter((r) => r.result !== "refused");
      // The model must not build on a file it believes it wrote: its next turn is told.
      if (undone.length) {
        const what = undone.map((r) => `${r.change?.tool} of ${r.change?.path} (${r.result})`).join("; ");
        s.recordNote(
          `The operator undid ${undone.length === 1 ? "your change" : `${undone.length} of your changes`}: ${what}. Those files are back to their content before your change; read them again before relying on them.`,
        );
      }
      return res;
    },

    async decideProposal(req, ctx) {
      const res = await d.broker.decideProposal(req, { signal: ctx.signal });
      const p = res.proposal;
      // A turn that stopped waiting still deserves to know: its session's next turn is told.
      if (p && !runner.approvals.decided(p)) store.get(p.sessionId)?.recordNote(lateDecisionNote(p));
      return res;
    },

    searchTools: (req, ctx) => d.broker.searchTools(req, { signal: ctx.signal }),
    listHooks: (req, ctx) => d.broker.listHooks(req, { signal: ctx.signal }),
    trustHooks: (req, ctx) => d.broker.trustHooks(req, { signal: ctx.signal }),
    answerElicitation: (req, ctx) => d.broker.answerElicitation(req, { signal: ctx.signal }),
    startMcpLogin: (req, ctx) => d.broker.startMcpLogin(req, { signal: ctx.signal }),
    finishMcpLogin: (req, ctx) => d.broker.finishMcpLogin(req, { signal: ctx.signal }),
    mcpLogout: (req, ctx) => d.broker.mcpLogout(req, { signal: ctx.signal }),

    status: (_req, ctx) => loopStatus(d, ctx.signal),

    async compactSession(req) {
      const r = await runner.compactNow(req.sessionId);
      return { ...(r ? { compacted: r } : {}), session: sessionInfo(runner.get(req.sessionId)) };
    },

    async addSchedule(req) {
      if (req.cron.length > MAX_CRON_CHARS)
        throw invalidArgument(`a cron expression is at most ${MAX_CRON_CHARS} characters`);
      if (Buffer.byteLength(req.prompt) > MAX_SCHEDULE_PROMPT_BYTES)
        throw invalidArgument(`a schedule's prompt is at most ${MAX_SCHEDULE_PROMPT_BYTES / 1024} KiB`);
      return scheduleInfo(d.schedules.add(req.cron, req.prompt));
    },
    async listSchedules() {
      return { schedules: d.schedules.list().map(scheduleInfo) };
    },
    async removeSchedule(req) {
      return { removed: d.schedules.remove(req.id) };
    },
    async runSchedule(req) {
      const sch = d.schedules.get(req.id);
      const s = await runner.create("scheduled", `schedule ${sch.id}`);
      d.schedules.markRan(sch.id);
      runner.start(s.id, sch.prompt).catch(() => undefined); // reported as a turn_failed event
      return sessionInfo(s);
    },
  };
}
