import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { SessionEvent } from "@boxmaker/common";
import { useStack } from "../support/use-stack.js";
import { doneOf, loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";
import { SimProcess, simProcessContract } from "../support/sim-process.js";
import { Stack, waitFor } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";

type Retry = Extract<SessionEvent["event"], { case: "retry" }>["value"];
const retries = (events: SessionEvent[]): Retry[] =>
  events.flatMap((e) => (e.event.case === "retry" ? [e.event.value] : []));

/** The session's messages as logged: role and content. */
async function logged(c: LoopClient, id: string) {
  return (await c.getSession({ id })).messages.map(
    (m) => JSON.parse(m.messageJson) as { role: string; content: string },
  );
}

/** Follows a session's events from its start until its turn ends. */
async function followTurn(c: LoopClient, sessionId: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const ev of c.follow({ sessionId, afterSeq: 0n })) {
    out.push(ev);
    if (ev.event.case === "turnDone" || ev.event.case === "turnFailed") break;
  }
  return out;
}

/**
 * llama-server dies mid-turn (the simulator's scripted crash: every
 * connection dropped, the socket gone for a while, then a new process with
 * empty caches) and the same turn completes once it is back.
 */
describe("a turn survives a llama-server restart", () => {
  const t = useStack("bxsr-", { inferproxy: { health_poll_ms: 200 } });

  it("killed mid-generation and back 1.5 s later: the request is sent again and the turn completes, logged once", async () => {
    const id = await newSession(t.client, "restart");
    t.stack.sim.enqueue({ content: "first answer" });
    doneOf(await turn(t.client, id, "one"));

    const cut = ["this ", "reply ", "is ", "cut ", "off"];
    t.stack.sim.enqueue({
      content: cut,
      tokenDelayMs: 20,
      crashAfterTokens: 3,
      crashDownMs: 1500,
      crashLoadingMs: 300,
    });
    t.stack.sim.enqueue({ content: "the whole answer" });
    const events = await turn(t.client, id, "two");
    const done = doneOf(events);
    expect(done.finalText).toBe("the whole answer");
    expect(t.stack.sim.restarts).toBe(1);

    const [waiting, resent, ...more] = retries(events);
    expect(more).toEqual([]);
    expect(waiting).toMatchObject({ phase: "waiting", attempt: 1, maxAttempts: 5, code: "UNAVAILABLE" });
    expect(waiting!.reason).toMatch(/dropped the stream mid-completion/);
    // What the person had seen of the cut reply is named, to the character.
    const shownBefore = events
      .slice(
        0,
        events.findIndex((e) => e.event.case === "retry"),
      )
      .flatMap((e) => (e.event.case === "content" ? [e.event.value.text] : []))
      .join("");
    expect(shownBefore.length).toBeGreaterThan(0);
    expect(waiting!.discardedContentChars).toBe(shownBefore.length);
    // The new process had nothing cached: the whole prompt was read again.
    expect(resent).toMatchObject({ phase: "resent", attempt: 1, promptCached: 0 });
    expect(resent!.promptReread).toBe(t.stack.sim.completions.at(-1)!.timings!.prompt_n);
    expect(resent!.waitedMs).toBeGreaterThan(0);

    // Nothing logged twice: one user message and one assistant message per turn, the cut reply nowhere.
    const msgs = (await logged(t.client, id)).filter((m) => m.role !== "system");
    expect(msgs.map((m) => `${m.role}:${m.content}`)).toEqual([
      "user:one",
      "assistant:first answer",
      "user:two",
      "assistant:the whole answer",
    ]);
    // The next turn works as usual, on the re-read cache.
    t.stack.sim.enqueue({ content: "three" });
    expect(doneOf(await turn(t.client, id, "three")).finalText).toBe("three");
  });

  it("a server that keeps dying is given up on after 5 retries, and the turn says so", async () => {
    const id = await newSession(t.client, "flapping");
    t.stack.sim.enqueue({ content: "ok" });
    doneOf(await turn(t.client, id, "hello"));
    for (let i = 0; i < 6; i++) t.stack.sim.enqueue({ content: ["a", "b", "c"], crashAfterTokens: 1, crashDownMs: 50 });
    const events = await turn(t.client, id, "again");
    const end = events.at(-1)!.event;
    expect(end.case).toBe("turnFailed");
    if (end.case !== "turnFailed") return;
    expect(end.value.code).toBe("UNAVAILABLE");
    expect(end.value.message).toMatch(/sent again 5 times; giving up/);
    expect(
      retries(events)
        .filter((r) => r.phase === "waiting")
        .map((r) => r.attempt),
    ).toEqual([1, 2, 3, 4, 5]);
    const msgs = await logged(t.client, id);
    expect(msgs.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual(["ok"]);
    await t.stack.sim.whenUp();
  });

  it("the turn's wall-clock budget bounds the wait for a server that does not come back", async () => {
    const id = await newSession(t.client, "gone");
    t.stack.sim.enqueue({ content: "ok" });
    doneOf(await turn(t.client, id, "hello"));
    t.stack.sim.enqueue({ content: ["a", "b"], crashAfterTokens: 1, crashDownMs: 6_000 });
    const events: SessionEvent[] = [];
    for await (const ev of t.client.send({ sessionId: id, text: "wait", budgets: { maxWallMs: 2_000 } }))
      events.push(ev);
    const done = doneOf(events);
    expect(done.finishReason).toBe("budget");
    expect(events.find((e) => e.event.case === "budgetBreach")?.event.value).toMatchObject({ budget: "wall_ms" });
    // Waiting, never resent (the server did not come back); a wait cut by the budget may be announced again.
    const phases = retries(events).map((r) => r.phase);
    expect(phases.length).toBeGreaterThan(0);
    expect(new Set(phases)).toEqual(new Set(["waiting"]));
    await t.stack.sim.whenUp();
  });

  it("a scheduled turn waits for a server that is restarting when it starts, and completes", async () => {
    const sch = await t.client.addSchedule({ cron: "0 0 1 1 *", prompt: "nightly check" });
    const up = t.stack.sim.restart({ downMs: 1_500, loadingMs: 300 });
    t.stack.sim.enqueue({ content: "all quiet" });
    const info = await t.client.runSchedule({ id: sch.id });
    const events = await followTurn(t.client, info.id);
    await up;
    expect(doneOf(events).finalText).toBe("all quiet");
    expect(retries(events).map((r) => r.phase)).toEqual(["waiting", "resent"]);
    await t.client.removeSchedule({ id: sch.id });
  });

  it("a main turn whose first request finds the server down still fails at once (a person is told now)", async () => {
    const id = await newSession(t.client, "down at start");
    const up = t.stack.sim.restart({ downMs: 1_500 });
    const events = await turn(t.client, id, "hello");
    await up;
    expect(events.at(-1)!.event.case).toBe("turnFailed");
    expect(retries(events)).toEqual([]);
  });
});

/**
 * A server that stays away: the turn waits for it once, for loopd's
 * server_wait_ms (small here), says so, and then fails in one line instead of
 * sending the request into the same outage again (5 × the wait, before).
 */
describe("a server that stays down past the window", () => {
  const t = useStack("bxsw-", { inferproxy: { health_poll_ms: 200 }, loopd: { server_wait_ms: 1_500 } });

  it("the turn waits once, for server_wait_ms, and fails with one line naming the wait", async () => {
    const id = await newSession(t.client, "stays down");
    t.stack.sim.enqueue({ content: "ok" });
    doneOf(await turn(t.client, id, "hello"));
    t.stack.sim.enqueue({ content: ["a", "b", "c"], crashAfterTokens: 1, crashDownMs: 8_000 });
    const events = await turn(t.client, id, "again");
    const end = events.at(-1)!.event;
    expect(end.case).toBe("turnFailed");
    if (end.case !== "turnFailed") return;
    expect(end.value.code).toBe("UNAVAILABLE");
    expect(end.value.message).toMatch(
      /^llama-server at \S+ did not come back within 1\.5 s \(state: down\); the turn waited once, for 1\.5 s \(loopd server_wait_ms\), and gives up$/,
    );
    // One wait, announced with its length; never resent.
    expect(retries(events)).toMatchObject([{ phase: "waiting", attempt: 1, waitMs: 1_500 }]);
    await t.stack.sim.whenUp();
  }, 60_000);

  it("a server that comes back within the window is still waited for, and the turn completes", async () => {
    const id = await newSession(t.client, "back in time");
    t.stack.sim.enqueue({ content: "ok" });
    doneOf(await turn(t.client, id, "hello"));
    t.stack.sim.enqueue({ content: ["a", "b", "c"], crashAfterTokens: 1, crashDownMs: 300 });
    t.stack.sim.enqueue({ content: "the whole answer" });
    const events = await turn(t.client, id, "again");
    expect(doneOf(events).finalText).toBe("the whole answer");
    expect(retries(events).map((r) => r.phase)).toEqual(["waiting", "resent"]);
  }, 60_000);
});

/**
 * llama-server as an operator meets it: SIGKILLed mid-turn, its socket file
 * left behind; a first restart attempt fails on that stale file (as
 * llama-server does), something else binds the path for a moment, then the
 * server is started again several seconds later. The turn in flight must
 * notice the server once it passes its self-test, whatever happened to the
 * socket file in between.
 */
describe("a turn survives a llama-server SIGKILL with a stale socket and a failed restart", () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: SimProcess;
  let stack: Stack;
  let c: LoopClient;

  beforeAll(async () => {
    tmp = tempDir("bxss-");
    const socketPath = join(tmp.dir, "llama.sock");
    sim = await new SimProcess(socketPath, tmp.dir).start([
      { content: "first answer" },
      { content: Array.from({ length: 400 }, (_, i) => `w${i} `), tokenDelayMs: 25 },
    ]);
    stack = await new Stack(tmp.dir, {
      upstream: { socketPath, contract: simProcessContract },
      inferproxy: { health_poll_ms: 2000 },
    }).start();
    c = loopClient(stack.sockets.loopd);
  });

  afterAll(async () => {
    c?.close();
    await stack?.stop();
    await sim?.kill();
    tmp?.cleanup();
  });

  it("the held request wakes once the restarted server passes its self-test, and the turn completes", async () => {
    const id = await newSession(c, "stale socket");
    doneOf(await turn(c, id, "one"));

    const events: SessionEvent[] = [];
    let restarted: Promise<void> | undefined;
    for await (const ev of c.send({ sessionId: id, text: "two" })) {
      events.push(ev);
      if (!restarted && ev.event.case === "content") {
        restarted = (async () => {
          await sim.kill();
          expect(existsSync(sim.socketPath)).toBe(true);
          // The naive restart: the stale file refuses the bind, as it does llama-server.
          const err = await new Promise<NodeJS.ErrnoException>((resolve) => {
            const s = createServer();
            s.once("error", resolve);
            s.listen(sim.socketPath, () => s.close(() => resolve(new Error("bound") as NodeJS.ErrnoException)));
          });
          expect(err.code).toBe("EADDRINUSE");
          // Wait until the held request is waiting for the server, then let something else
          // bind the path briefly (accepts and hangs up), then the real restart.
          await waitFor(() => events.some((e) => e.event.case === "retry"), 30_000, "the retry to be announced");
          rmSync(sim.socketPath);
          const held: import("node:net").Socket[] = [];
          const squatter = createServer((sock) => void held.push(sock));
          await new Promise<void>((r) => squatter.listen(sim.socketPath, () => r()));
          await sleep(1_500);
          await new Promise<void>((r) => {
            squatter.close(() => r());
            for (const h of held) h.destroy();
          });
          await sleep(2_000);
          await sim.start([{ content: "the whole answer" }]);
        })();
      }
    }
    await restarted;
    const done = doneOf(events);
    expect(done.finalText).toBe("the whole answer");
    const [waiting, resent, ...more] = retries(events);
    expect(more).toEqual([]);
    // Announced once, with how long it will wait (the default window: the CLI says it and how to stop).
    expect(waiting).toMatchObject({ phase: "waiting", attempt: 1, waitMs: 120_000 });
    expect(resent).toMatchObject({ phase: "resent", attempt: 1 });
    // The cut reply is nowhere and the answer is logged once.
    const msgs = (await logged(c, id)).filter((m) => m.role !== "system");
    expect(msgs.map((m) => `${m.role}:${m.content}`)).toEqual([
      "user:one",
      "assistant:first answer",
      "user:two",
      "assistant:the whole answer",
    ]);
  }, 90_000);
});

/**
 * The same SIGKILL, its socket file deleted, and no restart at all: the turn
 * waits once, for server_wait_ms, and ends in one line naming llama-server —
 * not a wait per retry, not the wall budget.
 */
describe("a llama-server process killed for good", () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: SimProcess;
  let stack: Stack;
  let c: LoopClient;

  beforeAll(async () => {
    tmp = tempDir("bxsg-");
    const socketPath = join(tmp.dir, "llama.sock");
    sim = await new SimProcess(socketPath, tmp.dir).start([
      { content: "first answer" },
      { content: Array.from({ length: 400 }, (_, i) => `w${i} `), tokenDelayMs: 25 },
    ]);
    stack = await new Stack(tmp.dir, {
      upstream: { socketPath, contract: simProcessContract },
      inferproxy: { health_poll_ms: 200 },
      loopd: { server_wait_ms: 2_000 },
    }).start();
    c = loopClient(stack.sockets.loopd);
  });

  afterAll(async () => {
    c?.close();
    await stack?.stop();
    await sim?.kill();
    tmp?.cleanup();
  });

  it("the turn waits once for the window and fails in one line naming llama-server; the log keeps only what was answered", async () => {
    const id = await newSession(c, "gone for good");
    doneOf(await turn(c, id, "one"));

    const events: SessionEvent[] = [];
    let killed: Promise<void> | undefined;
    for await (const ev of c.send({ sessionId: id, text: "two" })) {
      events.push(ev);
      if (!killed && ev.event.case === "content") {
        killed = (async () => {
          await sim.kill();
          rmSync(sim.socketPath);
        })();
      }
    }
    await killed;
    const end = events.at(-1)!.event;
    expect(end.case).toBe("turnFailed");
    if (end.case !== "turnFailed") return;
    expect(end.value.code).toBe("UNAVAILABLE");
    expect(end.value.message).toMatch(
      /^llama-server at \S+ did not come back within 2 s \(state: down\); the turn waited once, for 2 s \(loopd server_wait_ms\), and gives up$/,
    );
    expect(end.value.message.split("\n")).toHaveLength(1);
    expect(retries(events)).toMatchObject([{ phase: "waiting", attempt: 1, waitMs: 2_000 }]);
    expect(events.filter((e) => e.event.case === "turnFailed")).toHaveLength(1);
    const msgs = (await logged(c, id)).filter((m) => m.role !== "system");
    expect(msgs.map((m) => `${m.role}:${m.content}`)).toEqual(["user:one", "assistant:first answer", "user:two"]);
  }, 60_000);
});
