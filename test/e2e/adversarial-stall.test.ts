import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createClient,
  InferService,
  LoopService,
  RpcError,
  SessionRole,
  SlotActionKind,
  Status,
  type SessionEvent,
} from "@boxmaker/common";
import { useStack } from "../support/use-stack.js";
import { waitFor } from "../support/stack.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";
import { LOOP_DELAY_PRELOAD, loopDelays, type LoopDelay } from "../support/loop-delay.js";
import { malformedKinds, type Outcome } from "../support/hostile-h2.js";
import { resumingTurn } from "../support/resuming-turn.js";

/**
 * No input stalls any daemon. The real three daemons run as processes with
 * an event-loop-delay monitor preloaded into each (loop-delay-report.mjs),
 * and are fed, phase by phase, what a hostile local client and a hostile
 * model can send: 200 kB ids in every call loopd and inferproxy take, frames
 * that lie, bodies that do not decode and messages past every limit, an
 * AGENTS.md that is a FIFO, a symlink to /proc/self/environ or 50 MB, a
 * follower that stops reading in a long turn, 120 sessions starting a turn
 * at once, a model streaming 200 kB of tool arguments in 25,000 deltas and
 * a 4 MiB answer, and a spawn_agent whose task is kilobytes of terminal
 * escapes. After each phase every daemon's worst event-loop delay must be
 * under 250 ms, loopd's Status must have answered throughout (it asks the
 * other two), and at the end no daemon has exited or been replaced.
 */
const MAX_STALL_MS = 250;
const HUGE = 200_000;
const MiB = 1024 * 1024;

const delayDir = mkdtempSync(join(tmpdir(), "bxad-"));
// The daemons inherit it; the preload writes each one's report there.
process.env.BX_LOOP_DELAY_DIR = delayDir;

type PhaseReport = { phase: string; counts: Record<string, number>; delays: Record<string, LoopDelay>; polls: number };
const reports: PhaseReport[] = [];

describe("no input stalls a daemon (whole stack, every daemon measured)", () => {
  const t = useStack("bxas-", {
    sim: { nCtx: 1 << 20 },
    // Room for a model that streams 25,000 deltas in one request, and for the prompts that carry them.
    loopd: { max_tokens: 60_000, budgets: { max_total_tokens: 50_000_000 } },
    brokerd: { policy: { defaults: { exec: "allow" } } },
    nodeArgs: ["--import", LOOP_DELAY_PRELOAD],
  });
  const pids: Record<string, number> = {};

  beforeAll(() => {
    for (const d of t.stack.daemons.values()) pids[d.name] = d.proc.pid!;
  });
  afterAll(() => rmSync(delayDir, { recursive: true, force: true }));

  /**
   * Runs one phase between two delay snapshots, with loopd's Status polled
   * all the while (it answers only when loopd's loop turns, and reports
   * inferproxy and brokerd unreachable when they do not answer it in 3 s).
   */
  async function phase(name: string, body: () => Promise<Record<string, number>>): Promise<PhaseReport> {
    await loopDelays(t.stack, delayDir); // what came before is not this phase's
    const poller = loopClient(t.stack.sockets.loopd);
    let stop = false;
    let polls = 0;
    const failures: string[] = [];
    const poll = (async () => {
      while (!stop) {
        try {
          const s = await poller.status({}, { timeoutMs: 10_000 });
          for (const d of s.daemons) if (!d.reachable) failures.push(`${d.name}: ${d.message.slice(0, 200)}`);
          polls++;
        } catch (err) {
          failures.push(`loopd: ${(err as Error).message.slice(0, 200)}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    let counts: Record<string, number>;
    try {
      counts = await body();
    } finally {
      stop = true;
      await poll;
      poller.close();
    }
    const delays = await loopDelays(t.stack, delayDir);
    const r = { phase: name, counts, delays, polls };
    reports.push(r);
    const inputs = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log(
      `adversarial-stall/${name}: ${inputs} inputs (${Object.entries(counts)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}); max event-loop delay ${Object.entries(delays)
        .map(([d, v]) => `${d} ${v.maxMs} ms (wall ${v.wallMaxMs} ms)`)
        .join(", ")}; ${polls} Status answered`,
    );
    expect(failures, failures.join("\n")).toEqual([]);
    expect(polls).toBeGreaterThan(0);
    for (const [d, v] of Object.entries(delays)) {
      expect(v.samples, d).toBeGreaterThan(3);
      expect(v.maxMs, `${name}: ${d}'s event loop stalled`).toBeLessThan(MAX_STALL_MS);
    }
    return r;
  }

  /** The error a call ended with (undefined when it succeeded). */
  const failure = (p: Promise<unknown>): Promise<unknown> =>
    p.then(
      () => undefined,
      (e: unknown) => e,
    );
  const drain = async (it: AsyncIterable<unknown>) => {
    for await (const _ of it) {
      // nothing expected
    }
  };
  /** A refusal that names what was wrong, in a bounded message, on a connection that still serves. */
  const refusedBounded = (what: string, err: unknown) => {
    expect(err, what).toBeInstanceOf(RpcError);
    const e = err as RpcError;
    expect(
      [Status.NOT_FOUND, Status.INVALID_ARGUMENT, Status.FAILED_PRECONDITION, Status.RESOURCE_EXHAUSTED],
      `${what}: ${e.statusName} ${e.message.slice(0, 200)}`,
    ).toContain(e.status);
    expect(e.message.length, what).toBeLessThanOrEqual(2_048);
  };

  it("200 kB ids in every call loopd and inferproxy take, while another session's tool call runs", async () => {
    const ws = t.stack.workspace;
    const busy = await newSession(t.client, "busy");
    t.stack.sim.enqueue({
      toolCalls: [
        {
          id: "c1",
          name: "run_command",
          arguments: JSON.stringify({
            command: "touch started; while [ ! -e go ]; do sleep 0.05; done; echo finished",
          }),
        },
      ],
    });
    t.stack.sim.enqueue({ content: "The command finished." });
    const busyTurn = turn(t.client, busy, "run it");
    await waitFor(() => existsSync(join(ws, "started")), 30_000, "the command to start");

    // Let the command finish however the phase ends: it holds the main slot every later phase needs.
    const release = () => writeFileSync(join(ws, "go"), "");
    await phase("ids", async () => {
      const ids = [
        "i".repeat(HUGE),
        `x\n${"\x1b]52;c;".repeat(HUGE / 8)}`,
        "é".repeat(HUGE / 2),
        `${"../".repeat(HUGE / 3)}etc/passwd`,
      ];
      const other = loopClient(t.stack.sockets.loopd);
      const infer = createClient(InferService, t.stack.sockets.inferproxy);
      const calls: Array<[string, (id: string) => Promise<unknown>]> = [
        ["CreateSession parent", (id) => other.createSession({ role: SessionRole.SUBAGENT, title: "t", parentId: id })],
        ["Send", (id) => drain(other.send({ sessionId: id, text: "hi" }))],
        ["Follow", (id) => drain(other.follow({ sessionId: id, afterSeq: 0n }))],
        ["GetSession", (id) => other.getSession({ id })],
        ["CancelTurn", (id) => other.cancelTurn({ sessionId: id })],
        ["ArchiveSession", (id) => other.archiveSession({ id })],
        ["DeleteSession", (id) => other.deleteSession({ id })],
        ["RenameSession", (id) => other.renameSession({ id, title: "x" })],
        ["ListChanges", (id) => other.listChanges({ sessionId: id })],
        ["UndoChanges", (id) => other.undoChanges({ sessionId: id, last: 0, force: true })],
        ["CompactSession", (id) => other.compactSession({ sessionId: id })],
        ["DecideProposal approve", (id) => other.decideProposal({ id, approve: true })],
        ["DecideProposal reject", (id) => other.decideProposal({ id, approve: false, reason: id })],
        ["RemoveSchedule", (id) => other.removeSchedule({ id })],
        ["RunSchedule", (id) => other.runSchedule({ id })],
        ["AddSchedule cron", (id) => other.addSchedule({ cron: id, prompt: "x" })],
        ["ListProposals", (id) => other.listProposals({ sessionId: id, includeDecided: true })],
        ["SearchTools", (id) => other.searchTools({ query: id, limit: 10, includePrompts: true })],
        [
          "infer Complete token",
          (id) => drain(infer.complete({ slot: 0, messagesJson: "[]", afterMessagesToken: id })),
        ],
        ["infer Complete messages", (id) => drain(infer.complete({ slot: 0, messagesJson: id, requestId: id }))],
        ["infer Complete tools", (id) => drain(infer.complete({ slot: 0, messagesJson: "[]", toolsJson: id }))],
        [
          "infer Complete slot",
          (id) => drain(infer.complete({ slot: 4_000_000_000, messagesJson: "[]", requestId: id })),
        ],
        ["infer SlotAction", (id) => infer.slotAction({ slot: 0, action: SlotActionKind.SAVE, filename: id })],
        [
          "infer SlotAction restore",
          (id) => infer.slotAction({ slot: 9, action: SlotActionKind.RESTORE, filename: id }),
        ],
        [
          "infer SlotFiles",
          (id) =>
            infer.slotFiles({ erase: [id, ...Array.from({ length: 1000 }, (_, i) => `${i}${id.slice(0, 200)}`)] }),
        ],
      ];
      const counts: Record<string, number> = {};
      // Every id at every call, all at once: the stack must take the whole volley in stride.
      const outcomes = await Promise.all(
        calls.flatMap(([what, call]) =>
          ids.map(async (id) => {
            counts[what] = (counts[what] ?? 0) + 1;
            return [what, await failure(call(id))] as const;
          }),
        ),
      );
      for (const [what, err] of outcomes) {
        // These filter or act on what they are given: finding or doing nothing is an answer.
        if (err === undefined && /SearchTools|ListProposals|RemoveSchedule|CancelTurn/.test(what)) continue;
        refusedBounded(what, err);
      }
      other.close();
      infer.close();
      return counts;
    }).finally(release);
    const out = await busyTurn;
    const result = out.find((e) => e.event.case === "toolResult");
    expect(result?.event.case === "toolResult" && result.event.value.content).toContain("finished");
    expect(doneOf(out).finalText).toBe("The command finished.");
  }, 180_000);

  it("frames that lie, bodies that do not decode, messages past every limit (loopd and inferproxy)", async () => {
    await phase("malformed", async () => {
      const counts: Record<string, number> = {};
      const targets: Array<[string, string, string]> = [
        ["loopd", t.stack.sockets.loopd, "/boxmaker.v1.LoopService/GetSession"],
        ["inferproxy", t.stack.sockets.inferproxy, "/boxmaker.v1.InferService/Status"],
      ];
      const results: Array<[string, Outcome]> = [];
      for (const [daemon, socket, path] of targets) {
        for (const [kind, attempt] of malformedKinds(socket, path)) {
          // Three of each at once, then the next kind.
          const got = await Promise.all([attempt(), attempt(), attempt()]);
          counts[kind] = (counts[kind] ?? 0) + got.length;
          for (const o of got) results.push([`${daemon}: ${kind}`, o]);
        }
      }
      // No attempt is left hanging: each one got a status or a closed connection.
      for (const [what, o] of results) expect(o.ended, what).not.toBe("no answer");
      return counts;
    });
  }, 300_000);

  it("well-formed calls past what one call may carry: a 32 MB message, a 10 MB schedule, 200 kB and 1 MB titles", async () => {
    await phase("oversize", async () => {
      const c = loopClient(t.stack.sockets.loopd);
      const big = await c.createSession({ role: SessionRole.MAIN, title: `t${"\n".repeat(1000)}${"t".repeat(HUGE)}` });
      expect(big.title.length).toBeLessThanOrEqual(200);
      expect(big.title).not.toContain("\n");
      const renamed = await c.renameSession({ id: big.id, title: "\x1b[2J".repeat(MiB / 4) });
      expect(renamed.title.length).toBeLessThanOrEqual(200);
      const refusals = {
        "32 MB message": await failure(drain(c.send({ sessionId: big.id, text: "log line 42 ok\n".repeat(2 * MiB) }))),
        "10 MB schedule prompt": await failure(c.addSchedule({ cron: "0 0 1 1 *", prompt: "p".repeat(10 * MiB) })),
        "200 kB cron": await failure(c.addSchedule({ cron: "* ".repeat(HUGE / 2), prompt: "p" })),
      };
      for (const [what, e] of Object.entries(refusals)) {
        refusedBounded(what, e);
        expect((e as RpcError).status, what).toBe(Status.INVALID_ARGUMENT);
      }
      // A search query of 1 MB is the index's to answer (it finds nothing), not to choke on.
      await c.searchTools({ query: "q ".repeat(MiB / 2), limit: 1_000_000, includePrompts: true });
      // A message under the limit still goes through the pre-pass and the blob store.
      const under = await resumingTurn(c, big.id, "log line 42 ok\n".repeat(200_000));
      expect(doneOf(under.events).spilledBlocks).toBe(1);
      expect((await c.listSchedules({})).schedules).toEqual([]);
      expect((await c.listSessions({})).sessions.length).toBeGreaterThan(0);
      c.close();
      return {
        "oversize titles": 2,
        ...Object.fromEntries(Object.keys(refusals).map((k) => [k, 1])),
        "1 MB query": 1,
        "3 MB message": 1,
      };
    });
  }, 180_000);

  it("an AGENTS.md that is a FIFO, a symlink to /proc/self/environ, or 50 MB, at session start", async () => {
    const agents = join(t.stack.workspace, "AGENTS.md");
    await phase("instructions", async () => {
      const counts: Record<string, number> = {};
      const plants: Array<[string, () => void, boolean]> = [
        ["fifo", () => execFileSync("mkfifo", [agents]), false],
        ["symlink to /proc/self/environ", () => symlinkSync("/proc/self/environ", agents), false],
        ["50 MB file", () => writeFileSync(agents, Buffer.alloc(50 * MiB, "# do as I say\n")), true],
      ];
      for (const [kind, plant, read] of plants) {
        rmSync(agents, { force: true });
        plant();
        // Several sessions start on it at once.
        const sessions = await Promise.all(Array.from({ length: 4 }, () => newSession(t.client, kind)));
        for (const id of sessions) {
          const done = doneOf(await turn(t.client, id, "hello"));
          expect(done.finishReason).toBe("stop");
          const info = (await t.client.getSession({ id })).session!;
          expect(info.instructionsFile, kind).toBe(read ? agents : "");
          const system = t.stack.sim.completions.at(-1)!.body as { messages: Array<{ content: string }> };
          const sys = system.messages[0]!.content;
          expect(sys).not.toContain("BX_LOOP_DELAY_DIR");
          expect(Buffer.byteLength(sys)).toBeLessThan(200_000);
        }
        counts[kind] = sessions.length;
      }
      rmSync(agents, { force: true });
      return counts;
    });
  }, 180_000);

  it("a follower that stops reading during a long turn, while the turn's own stream is read", async () => {
    const id = await newSession(t.client, "long");
    // 9,000 events of about 250 bytes: past what the sockets and HTTP/2 windows hold plus loopd's
    // 4,096-event bound for a reader that stopped, and within the 10,000 events loopd keeps of a turn.
    const DELTAS = 9_000;
    t.stack.sim.enqueue({
      content: Array.from({ length: DELTAS }, (_, i) => `${String(i).padStart(6, "0")}${"w".repeat(234)} `),
      tokenDelayMs: 1,
    });
    await phase("slow follower", async () => {
      const info = (await t.client.getSession({ id })).session!;
      // The CLI's own client: it reads a stream only as fast as its caller pulls.
      const follower = createClient(LoopService, t.stack.sockets.loopd, {
        headersTimeoutMs: 30_000,
        methods: { follow: { headersTimeoutMs: 0 } },
      });
      const ac = new AbortController();
      const followed = follower.follow({ sessionId: id, afterSeq: info.lastEventSeq }, { signal: ac.signal });
      const it = followed[Symbol.asyncIterator]();
      const sent = resumingTurn(t.client, id, "talk for a long time");
      // It reads the first event, then nothing until the turn is over.
      const first = await it.next();
      const { events } = await sent;
      expect(doneOf(events).finishReason).toBe("stop");
      const got: SessionEvent[] = first.done ? [] : [first.value];
      let ended: unknown;
      try {
        for (;;) {
          const n = await it.next();
          if (n.done) break;
          got.push(n.value);
          if (n.value.event.case === "turnDone") break;
        }
      } catch (err) {
        ended = err;
      }
      ac.abort();
      let resumed = 0;
      // Ended for falling behind, with where to pick up; picking up there misses and repeats nothing.
      expect(ended, "the follower that stopped reading was never ended").toBeInstanceOf(RpcError);
      {
        const e = ended as RpcError;
        expect(e.status, e.message).toBe(Status.RESOURCE_EXHAUSTED);
        expect(e.details.resumeAfterSeq).toBe(got.at(-1)!.seq);
        const again = new AbortController();
        for await (const ev of follower.follow(
          { sessionId: id, afterSeq: e.details.resumeAfterSeq },
          { signal: again.signal },
        )) {
          got.push(ev);
          resumed++;
          if (ev.event.case === "turnDone") break;
        }
        again.abort();
      }
      follower.close();
      expect(got.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
      console.log(
        `adversarial-stall/slow follower: the turn published ${events.length} events; the stalled follower got ` +
          `${got.length - resumed} before loopd ended it at seq ${got.length - resumed} and ${resumed} after resuming`,
      );
      return { "stalled followers": 1, "streamed deltas": DELTAS };
    });
  }, 180_000);

  it("120 sessions each starting a turn at once", async () => {
    t.stack.sim.reset();
    await phase("concurrent sessions", async () => {
      const N = 120;
      const ids = await Promise.all(Array.from({ length: N }, (_, i) => newSession(t.client, `many ${i}`)));
      const turns = await Promise.all(ids.map((id, i) => turn(t.client, id, `question ${i}`)));
      for (const [i, ev] of turns.entries()) expect(doneOf(ev).finalText).toContain(`question ${i}`);
      return { "sessions with a turn": N };
    });
  }, 300_000);

  it("a model streaming 200 kB of tool arguments in 25,000 deltas, then a 4 MiB answer", async () => {
    const id = await newSession(t.client, "chatty model");
    const args = JSON.stringify({ path: "README.md", junk: "j".repeat(HUGE) });
    const argDeltas = args.match(/[\s\S]{1,8}/g)!;
    const answer = Array.from({ length: 2_048 }, (_, i) => `${String(i).padStart(6, "0")}${"y".repeat(2_042)}`);
    t.stack.sim.enqueue({ toolCalls: [{ id: "big", name: "read_file", arguments: argDeltas }] });
    t.stack.sim.enqueue({ content: answer });
    await phase("model", async () => {
      const { events } = await resumingTurn(t.client, id, "go");
      const call = events.find((e) => e.event.case === "toolCall");
      expect(call?.event.case === "toolCall" && call.event.value.arguments).toBe(args);
      const result = events.find((e) => e.event.case === "toolResult");
      expect(result?.event.case === "toolResult" && result.event.value.isError).toBe(true);
      expect(doneOf(events).finalText).toBe(answer.join(""));
      return { "tool-argument deltas": argDeltas.length, "answer deltas": answer.length };
    });
  }, 240_000);

  it("a spawn_agent whose task is kilobytes of terminal escapes", async () => {
    const parent = await newSession(t.client, "parent");
    const task = `${"\x1b]0;owned\x07\x1b[2J\x1b]52;c;Y3VybCB4fHNo\x07\r\u202e".repeat(200)}${"T".repeat(8_000)}`;
    t.stack.sim.enqueue({ toolCalls: [{ id: "sp", name: "spawn_agent", arguments: JSON.stringify({ task }) }] }, 0);
    t.stack.sim.enqueue({ content: "child done" }, 1);
    t.stack.sim.enqueue({ content: "parent done" }, 0);
    await phase("spawn_agent", async () => {
      expect(doneOf(await turn(t.client, parent, "delegate")).finalText).toBe("parent done");
      const child = (await t.client.listSessions({})).sessions.find((s) => s.parentId === parent)!;
      expect(child.title.length).toBeLessThanOrEqual(80);
      const ls = await t.stack.cli(["ls"]);
      expect(ls.code, ls.stderr).toBe(0);
      // No raw escape or carriage return from the task reaches the listing.
      expect(ls.stdout.includes("\x1b") || ls.stdout.includes("\r")).toBe(false);
      return { "hostile spawn_agent tasks": 1, "child sessions": 1 };
    });
  }, 120_000);

  it("no daemon crashed or restarted, and the summary of what was thrown at them", () => {
    for (const d of t.stack.daemons.values()) {
      expect(d.proc.exitCode, `${d.name}: ${d.stderr.join("").slice(-2000)}`).toBeNull();
      expect(d.proc.signalCode, d.name).toBeNull();
      expect(d.proc.pid, `${d.name} was replaced`).toBe(pids[d.name]);
      expect(d.stderr.join(""), d.name).not.toMatch(/uncaught|unhandled|FATAL ERROR|heap out of memory/i);
    }
    const worst: Record<string, number> = {};
    let inputs = 0;
    for (const r of reports) {
      inputs += Object.values(r.counts).reduce((a, b) => a + b, 0);
      for (const [d, v] of Object.entries(r.delays)) worst[d] = Math.max(worst[d] ?? 0, v.maxMs);
    }
    console.log(
      `adversarial-stall: ${inputs} hostile inputs over ${reports.length} phases; worst event-loop delay ` +
        `${Object.entries(worst)
          .map(([d, ms]) => `${d} ${ms} ms`)
          .join(", ")}; 0 crashes, 0 restarts`,
    );
    expect(reports.length).toBe(8);
  });

  it("each daemon still stops on SIGTERM, cleanly", async () => {
    for (const name of ["loopd", "brokerd", "inferproxy"]) {
      const d = t.stack.daemons.get(name)!;
      const t0 = performance.now();
      const exited = new Promise<number | null>((r) => d.proc.once("exit", (code) => r(code)));
      d.proc.kill("SIGTERM");
      const code = await Promise.race([
        exited,
        new Promise<string>((r) => setTimeout(() => r("still running"), 25_000)),
      ]);
      console.log(`adversarial-stall: ${name} stopped in ${Math.round(performance.now() - t0)} ms (exit ${code})`);
      expect(code, `${name}: ${d.stderr.join("").slice(-2000)}`).toBe(0);
    }
  }, 90_000);
});
