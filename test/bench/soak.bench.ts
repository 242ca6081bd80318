// Days of use compressed into minutes: several main sessions take turns at
// once on the real stack (the simulator as a llama-server process of its own)
// — plain answers, tool calls, writes approved or rejected, subagents, pastes
// large enough to spill to blobs, compactions in a small context — while a
// schedule fires every 15 s, and every few seconds one of inferproxy, loopd,
// brokerd or the llama-server is killed (SIGTERM or SIGKILL) and started
// again. At the end every user message loopd acknowledged must be in its
// session's log (`acknowledged_turns_lost`, which must be 0: the bench fails
// otherwise), and it prints, per 1,000 turns, what every directory under the
// state and runtime dirs grew by, each daemon's resident memory and open fds
// at the start and the end, and how the turns ended.
//   npm run bench -- soak            3 minutes
//   npm run bench -- soak --soak     15 minutes
// BOXMAKER_BENCH_SOAK_S sets the length in seconds; BOXMAKER_BENCH_SOAK_TURNS
// instead runs until that many main turns were acknowledged (within the
// bench's time limit); BOXMAKER_BENCH_SOAK_SEED picks another run of chances.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SessionRole, type SessionEvent } from "@boxmaker/common";
import type { Turn } from "@boxmaker/llama-sim";
import { type LoopClient, loopClient } from "../support/loop-client.js";
import { SimProcess, simContractFor } from "../support/sim-process.js";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { type DirUsage, dirUsage, usageGrowth } from "../support/dir-usage.js";
import {
  isGenericFailure,
  type LoggedMessage,
  lostTurns,
  type Missing,
  SoakLedger,
  type TurnEnd,
  unansweredTurns,
} from "../support/soak-ledger.js";
import { openFdsByKind } from "../support/processes.js";
import { ProcessSampler } from "../support/process-sampler.js";
import { Chaos, DAEMONS } from "../support/stack-chaos.js";
import type { BenchContext, Emit } from "./bench-context.js";

export const timeLimitS = 600;
export const soakTimeLimitS = 2700;

// A slot this small (the tools alone are ~1,000 tokens) fills in a dozen turns, so sessions compact.
const N_CTX = 8192;
const WORKERS = 4;
// A worker starts a new session after this many turns, as people do; sessions pile up as in real use.
const TURNS_PER_SESSION = 30;
// A client that sees nothing end its turn by then gives up on it and counts it as failed without a reason.
const TURN_TIMEOUT_MS = 120_000;

interface Settings {
  durationS: number;
  turnTarget: number | undefined;
  seed: number;
}

function settings(soak: boolean): Settings {
  const env = process.env;
  const turns = env.BOXMAKER_BENCH_SOAK_TURNS ? Number(env.BOXMAKER_BENCH_SOAK_TURNS) : undefined;
  return {
    durationS: Number(env.BOXMAKER_BENCH_SOAK_S ?? (soak ? 900 : 180)),
    turnTarget: turns,
    seed: Number(env.BOXMAKER_BENCH_SOAK_SEED ?? 1),
  };
}

/** A seeded generator, so that a run that finds something can be run again with the same chances. */
function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The simulator as its own process, and the stack on it; both in `dir`. */
async function boot(dir: string): Promise<{ stack: Stack; sim: SimProcess }> {
  const run = join(dir, "run");
  const simDir = join(dir, "sim");
  mkdirSync(run, { recursive: true });
  mkdirSync(simDir, { recursive: true });
  const sim = await new SimProcess(join(run, "llama.sock"), simDir).start([], { nCtx: N_CTX });
  const stack = await new Stack(dir, {
    upstream: { socketPath: sim.socketPath, contract: simContractFor(N_CTX) },
    inferproxy: { health_poll_ms: 500 },
    loopd: {
      max_tokens: 256,
      compaction: { threshold: 0.8, keep_recent_messages: 4 },
      prepass: { threshold_bytes: 16_384, excerpt_bytes: 2_048 },
      // A turn whose server or approval went away waits seconds here, not minutes: a soak is short.
      server_wait_ms: 20_000,
      approval_wait_ms: 15_000,
      schedules: [{ id: "soak", cron: "*/15 * * * * *", prompt: "scheduled soak check" }],
    },
  }).start();
  writeFileSync(join(stack.workspace, "notes.txt"), "the build is green; the deploy is on Friday\n");
  return { stack, sim };
}

/** What a turn asks the model to do, and what the simulator is told to answer on the main slot. */
interface Plan {
  kind: "plain" | "tool" | "write" | "subagent" | "paste";
  text: string;
  script: Turn[];
}

// Each turn carries ~1.5 KB of its own, so that sessions reach the compaction threshold.
const filler = (n: number) => `context line ${n}: the service restarted after the config change. `.repeat(22);

/** A log of ~24 KB that no earlier turn pasted: the pre-pass spills it to a new blob. */
function pastedLog(tag: string): string {
  const lines: string[] = [];
  for (let i = 0; i < 300; i++) {
    lines.push(`2026-12-03T10:${String(i % 60).padStart(2, "0")}:00Z INFO ${tag} batch ${i} processed ${i * 37} rows`);
  }
  lines.splice(150, 0, `2026-12-03T10:30:00Z ERROR ${tag} worker 7 lost its lease`);
  return lines.join("\n");
}

function plan(marker: string, n: number, rand: () => number): Plan {
  const r = rand();
  const text = (ask: string) => `${marker} ${ask}\n${filler(n)}`;
  if (r < 0.4) return { kind: "plain", text: text("How are things?"), script: [] };
  if (r < 0.6) {
    const call = { name: "read_file", arguments: '{"path":"notes.txt"}' };
    return { kind: "tool", text: text("Read notes.txt."), script: [{ toolCalls: [call] }, { content: "Read it." }] };
  }
  if (r < 0.75) {
    const args = JSON.stringify({ path: `soak/${marker.slice(1, -1)}.txt`, content: "soak\n" });
    return {
      kind: "write",
      text: text("Write a file."),
      script: [{ toolCalls: [{ name: "write_file", arguments: args }] }, { content: "Written, or not." }],
    };
  }
  if (r < 0.85) {
    const call = { name: "spawn_agent", arguments: '{"task":"count to three"}' };
    return {
      kind: "subagent",
      text: text("Delegate counting."),
      script: [{ toolCalls: [call] }, { content: "Done." }],
    };
  }
  return { kind: "paste", text: `${marker} What failed here?\n\n${pastedLog(marker)}`, script: [] };
}

interface Tally {
  byKind: Map<string, number>;
  compactions: number;
  spills: number;
  approved: number;
  rejected: number;
}

/** What the clients share: the processes, the chaos, and where what they see is counted. */
interface SoakRun {
  stack: Stack;
  sim: SimProcess;
  chaos: Chaos;
  ledger: SoakLedger;
  tally: Tally;
  rand: () => number;
}

/** One main session's client: turn after turn until `done()`, a new session every TURNS_PER_SESSION turns. */
async function worker(w: number, ctx: SoakRun, done: () => boolean): Promise<void> {
  const client = loopClient(ctx.stack.sockets.loopd);
  let sessionId: string | undefined;
  let turnsInSession = 0;
  let n = 0;
  try {
    while (!done()) {
      if (!sessionId || turnsInSession >= TURNS_PER_SESSION) {
        sessionId = await createSession(client, `soak ${w}`);
        turnsInSession = 0;
        if (!sessionId) continue;
      }
      const marker = `[soak-w${w}-t${n++}]`;
      const p = plan(marker, n, ctx.rand);
      ctx.tally.byKind.set(p.kind, (ctx.tally.byKind.get(p.kind) ?? 0) + 1);
      // The server may be down: the turn then goes with the default answer, or fails naming the server.
      if (p.script.length) await ctx.sim.enqueue(p.script, 0).catch(() => undefined);
      const end = await runTurn(client, sessionId, p.text, marker, ctx);
      ctx.ledger.record(end, sessionId, marker);
      if (end.kind !== "rejected") turnsInSession++;
      else await sleep(300 + ctx.rand() * 700);
    }
  } finally {
    client.close();
  }
}

async function createSession(client: LoopClient, title: string): Promise<string | undefined> {
  try {
    await client.waitForReady(15_000);
    return (await client.createSession({ role: SessionRole.MAIN, title })).id;
  } catch {
    await sleep(500);
    return undefined;
  }
}

/** One turn as a client sees it; approves or rejects what it is asked to, and says how the turn ended. */
async function runTurn(
  client: LoopClient,
  sessionId: string,
  text: string,
  marker: string,
  ctx: SoakRun,
): Promise<TurnEnd> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), TURN_TIMEOUT_MS);
  const t0 = performance.now();
  let started = false;
  let last: SessionEvent["event"] | undefined;
  const seen: string[] = [];
  try {
    await client.waitForReady(15_000);
    for await (const ev of client.send({ sessionId, text }, { signal: ac.signal })) {
      last = ev.event;
      seen.push(`${ev.seq} ${ev.event.case}${ev.event.case === "turnDone" ? ` ${ev.event.value.finishReason}` : ""}`);
      if (ev.event.case === "turnStarted" && !started) {
        started = true;
        ctx.ledger.ack(sessionId, marker);
      } else if (ev.event.case === "toolDecision" && ev.event.value.proposalId) {
        await decide(client, ev.event.value.proposalId, ctx);
      } else if (ev.event.case === "compacted") ctx.tally.compactions++;
      else if (ev.event.case === "inputSpilled") ctx.tally.spills++;
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (!started) return { kind: "rejected", reason: message };
    if (ac.signal.aborted) return { kind: "failed", reason: `no end after ${TURN_TIMEOUT_MS / 1000} s`, generic: true };
    // A stream cut while loopd was being killed has its cause; one cut otherwise does not.
    const known = ctx.chaos.loopdDownBetween(t0, performance.now());
    return known
      ? { kind: "failed", reason: `loopd killed mid-turn: ${message}`, generic: false }
      : { kind: "failed", reason: message, generic: isGenericFailure(message) };
  } finally {
    clearTimeout(timer);
  }
  if (last?.case === "turnDone" && last.value.finishReason === "cancelled") {
    // Nobody here cancels a turn: loopd stopping (SIGTERM) cancels those it runs and those in line for a slot,
    // and turn_done says only "cancelled", not why.
    ctx.ledger.cancelledUnasked++;
    const stopping = ctx.chaos.loopdDownBetween(t0, performance.now()) ? " (loopd was stopping)" : "";
    return { kind: "failed", reason: `turn_done: cancelled, though nobody cancelled it${stopping}`, generic: true };
  }
  // A turn_done with no turn_started before it: the client cannot tell whether its message was taken.
  if (!started && last?.case === "turnDone") ctx.ledger.endedUnstarted(sessionId, seen);
  if (last?.case === "turnDone") return { kind: "completed" };
  if (last?.case === "turnFailed") {
    const { code, message } = last.value;
    // Refused before it started (its slot, a cancellation while queued): the message was not taken.
    if (!started) return { kind: "rejected", reason: `${code}: ${message}` };
    return { kind: "failed", reason: `${code}: ${message}`, generic: isGenericFailure(message) };
  }
  if (!started) return { kind: "rejected", reason: "the stream ended before the turn started" };
  return { kind: "failed", reason: `stream ended after ${last?.case ?? "nothing"}, without an end`, generic: true };
}

async function decide(client: LoopClient, id: string, ctx: { tally: Tally; rand: () => number }): Promise<void> {
  const approve = ctx.rand() < 0.5;
  try {
    await client.decideProposal({ id, approve });
    if (approve) ctx.tally.approved++;
    else ctx.tally.rejected++;
  } catch {
    // loopd or brokerd went away: the turn tells the model the write is still pending.
  }
}

/** Waits until no session is running (a turn cut by a kill is interrupted at loopd's next start). */
async function settle(client: LoopClient): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    try {
      await client.waitForReady(15_000);
      const { sessions } = await client.listSessions({ limit: 0 });
      if (!sessions.some((s) => s.state === "running" || s.state === "waiting")) return;
    } catch {
      // loopd still starting
    }
    await sleep(500);
  }
}

/** Each session's messages as its log holds them; undefined when it cannot be read. */
async function loggedMessages(
  client: LoopClient,
  ids: Iterable<string>,
): Promise<Map<string, LoggedMessage[] | undefined>> {
  const out = new Map<string, LoggedMessage[] | undefined>();
  for (const id of ids) {
    try {
      const h = await client.getSession({ id });
      const role = (json: string) => (JSON.parse(json) as { role: string }).role;
      out.set(
        id,
        h.messages.map((m) => ({ role: role(m.messageJson), json: m.messageJson })),
      );
    } catch {
      out.set(id, undefined);
    }
  }
  return out;
}

/** Scheduled and subagent runs from loopd's list: each is one turn in a session of its own. */
async function sideTurns(client: LoopClient) {
  const { sessions } = await client.listSessions({ limit: 0, includeArchived: true });
  const of = (role: SessionRole) => {
    const s = sessions.filter((x) => x.role === role);
    return { started: s.length, completed: s.filter((x) => x.state === "idle" && x.messages >= 2).length };
  };
  return { scheduled: of(SessionRole.SCHEDULED), subagent: of(SessionRole.SUBAGENT), sessions: sessions.length };
}

const usageOf = (dir: string) => {
  const all = new Map<string, DirUsage>();
  for (const root of ["state", "run"]) {
    for (const [rel, u] of dirUsage(join(dir, root), { fold: isFanOut })) all.set(rel ? `${root}/${rel}` : root, u);
  }
  return all;
};

// The blob store's two-hex-digit fan-out directories count in blobs/, not as 256 figures.
const isFanOut = (name: string) => /^[0-9a-f]{2}$/.test(name);

const metricName = (path: string) => path.replace(/[^A-Za-z0-9]+/g, "_");

export default async function (emit: Emit, { soak }: BenchContext): Promise<void> {
  const cfg = settings(soak);
  const rand = random(cfg.seed);
  const tmp = tempDir("bxb-soak-");
  const { stack, sim } = await boot(tmp.dir);
  const chaos = new Chaos(stack, sim, rand, (s) => s.start([], { nCtx: N_CTX }));
  const ledger = new SoakLedger();
  const tally: Tally = { byKind: new Map(), compactions: 0, spills: 0, approved: 0, rejected: 0 };
  const sampler = new ProcessSampler(
    () =>
      new Map<string, number | undefined>([
        ...DAEMONS.map((d) => [d, stack.daemons.get(d)!.proc.pid] as [string, number | undefined]),
        ["llama_server", sim.pid],
      ]),
  );
  const client = loopClient(stack.sockets.loopd);
  try {
    const before = usageOf(tmp.dir);
    sampler.start();
    const t0 = performance.now();
    const done = () =>
      cfg.turnTarget !== undefined
        ? ledger.counts.started >= cfg.turnTarget
        : performance.now() - t0 > cfg.durationS * 1000;
    chaos.start();
    const progress = setInterval(() => {
      const c = ledger.counts;
      process.stderr.write(
        `soak: ${Math.round((performance.now() - t0) / 1000)} s, ${c.started} started, ${c.completed} completed, ` +
          `${c.failedWithReason + c.failedWithoutReason} failed, ${c.rejected} rejected\n`,
      );
    }, 30_000);
    const ctx: SoakRun = { stack, sim, chaos, ledger, tally, rand };
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w, ctx, done)));
    clearInterval(progress);
    const runS = (performance.now() - t0) / 1000;
    await chaos.stop();
    await chaos.ensureUp();
    await settle(client);
    sampler.stop();
    const after = usageOf(tmp.dir);

    // Before the check below, which reads every session back into loopd (each read-back holds its log open).
    const fdsAtEnd = fdReport(tmp.dir, sampler.pidsNow());
    const logged = await loggedMessages(client, ledger.acknowledged.keys());
    const lost = lostTurns(ledger.acknowledged, logged);
    const unanswered = unansweredTurns(ledger.completedTurns, logged);
    const side = await sideTurns(client);
    const c = ledger.counts;
    const turns = c.started + side.scheduled.started + side.subagent.started;
    const per1000 = (x: number) => (x * 1000) / Math.max(1, turns);

    emit("acknowledged_turns_lost", lost.length, "turns");
    emit("completed_turns_without_logged_answer", unanswered.length, "turns");
    emit("run_s", runS, "s");
    emit("turns_total", turns, "turns");
    emit("main_turns_started", c.started, "turns");
    emit("main_turns_completed", c.completed, "turns");
    emit("main_turns_failed_with_reason", c.failedWithReason, "turns");
    emit("main_turns_failed_without_reason", c.failedWithoutReason, "turns");
    emit("main_sends_rejected_before_start", c.rejected, "sends");
    emit("main_turns_ended_without_turn_started", ledger.unstarted.length, "turns");
    emit("main_turns_cancelled_unasked", ledger.cancelledUnasked, "turns");
    emit("scheduled_turns_started", side.scheduled.started, "turns");
    emit("scheduled_turns_completed", side.scheduled.completed, "turns");
    emit("subagent_turns_started", side.subagent.started, "turns");
    emit("subagent_turns_completed", side.subagent.completed, "turns");
    emit("sessions", side.sessions, "sessions");
    emit("compactions", tally.compactions, "compactions");
    emit("pastes_spilled", tally.spills, "blocks");
    emit("writes_approved", tally.approved, "proposals");
    emit("writes_rejected", tally.rejected, "proposals");
    for (const [t, k] of chaos.kills) emit(`kills_${metricName(t)}`, k, "kills");
    emit("restart_failures", chaos.restartFailures.length, "starts");
    emit("stops_over_15s", chaos.slowStops.length, "stops");
    for (const [path, g] of usageGrowth(before, after)) {
      emit(`growth_${metricName(path)}_mib_per_1000_turns`, per1000(g.bytes / 1048576), "MiB");
      emit(`growth_${metricName(path)}_files_per_1000_turns`, per1000(g.files), "files");
    }
    for (const name of [...DAEMONS, "llama_server"]) {
      const f = sampler.first.get(name);
      const l = sampler.last.get(name);
      const m = sampler.max.get(name);
      if (!f || !l || !m) continue;
      emit(`${name}_rss_mib_start`, f.rss, "MiB");
      emit(`${name}_rss_mib_end`, l.rss, "MiB");
      emit(`${name}_rss_mib_max`, m.rss, "MiB");
      emit(`${name}_fds_start`, f.fds, "fds");
      emit(`${name}_fds_end`, l.fds, "fds");
      emit(`${name}_fds_max`, m.fds, "fds");
    }
    report(ledger, tally, chaos, lost, unanswered);
    process.stderr.write(fdsAtEnd);
    if (lost.length) {
      throw new Error(
        `${lost.length} acknowledged turns are missing from their session logs: ${lost
          .slice(0, 5)
          .map((l) => `${l.marker} in ${l.sessionId}`)
          .join(", ")}`,
      );
    }
    if (c.completed === 0) throw new Error("no turn completed: the stack did not work at all");
  } finally {
    client.close();
    await chaos.stop();
    sampler.stop();
    await stack.stop();
    await sim.kill("SIGTERM");
    tmp.cleanup();
  }
}

/** What the numbers do not say: the causes turns failed with, and any start that failed. */
function report(ledger: SoakLedger, tally: Tally, chaos: Chaos, lost: Missing, unanswered: Missing): void {
  const top = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([k, v]) => `  ${String(v).padStart(5)}  ${k}`)
      .join("\n");
  const lines = [
    `soak: turns by kind: ${[...tally.byKind].map(([k, v]) => `${k} ${v}`).join(", ")}`,
    `soak: failures by cause:\n${top(ledger.failures) || "  none"}`,
    `soak: sends rejected before a turn started, by cause:\n${top(ledger.rejections) || "  none"}`,
    ...ledger.unstarted
      .slice(0, 3)
      .map((u) => `soak: a turn ended without turn_started in ${u.sessionId}; its events: ${u.events.join(", ")}`),
    ...(chaos.slowStops.length ? [`soak: slow stops:\n  ${chaos.slowStops.join("\n  ")}`] : []),
    ...(chaos.restartFailures.length ? [`soak: failed starts:\n  ${chaos.restartFailures.join("\n  ")}`] : []),
    ...(unanswered.length
      ? [`soak: completed, no answer logged: ${unanswered.map((l) => `${l.marker} in ${l.sessionId}`).join(", ")}`]
      : []),
    ...(lost.length ? [`soak: LOST: ${lost.map((l) => `${l.marker} in ${l.sessionId}`).join(", ")}`] : []),
  ];
  process.stderr.write(`${lines.join("\n")}\n`);
}

/** What each process's open fds are at the end: a count that grew says here what it grew with. */
function fdReport(dir: string, pids: Map<string, number | undefined>): string {
  let out = "";
  for (const [name, pid] of pids) {
    if (pid === undefined) continue;
    const kinds = [...openFdsByKind(pid)]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 5)
      .map(([k, v]) => `${v} ${k.replace(dir, "<stack>")}`);
    out += `soak: ${name} open fds at the end: ${kinds.join(", ")}\n`;
  }
  return out;
}
