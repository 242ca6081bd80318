import { describe, expect, it } from "vitest";
import { startLlamaSim } from "@boxmaker/llama-sim";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, startTurn, turn } from "../support/loop-client.js";

/**
 * Parts of the system die; a person gets a clear error, the session loses
 * nothing and works again once the part is back.
 */
describe("failures along the path", () => {
  // Calls between daemons wait this long for a peer that is not connected (default 10 s): long
  // enough for a restarted daemon to answer on a loaded machine, short enough for a dead one's test.
  const t = useStack("bxf-", { loopd: { peer_wait_ms: 6_000 } });

  it("a dead llama-server fails the turn with UNAVAILABLE; the session works once it is back", async () => {
    const id = await newSession(t.client, "dead server");
    t.stack.sim.enqueue({ content: "first answer" });
    expect(doneOf(await turn(t.client, id, "one")).finalText).toBe("first answer");

    await t.stack.sim.close();
    const failed = (await turn(t.client, id, "two")).at(-1)!;
    expect(failed.event.case).toBe("turnFailed");
    if (failed.event.case !== "turnFailed") return;
    expect(failed.event.value.code).toBe("UNAVAILABLE");
    expect(failed.event.value.message).toContain(t.stack.sockets.llama);

    // Back on the same socket, as a restarted server would be.
    t.stack.sim = await startLlamaSim({ socketPath: t.stack.sockets.llama });
    t.stack.sim.enqueue({ content: "third answer" });
    let events = await turn(t.client, id, "three");
    for (let i = 0; i < 50 && events.at(-1)?.event.case === "turnFailed"; i++) {
      // inferproxy re-runs its self-test once it sees the server again.
      await new Promise((r) => setTimeout(r, 100));
      t.stack.sim.reset();
      t.stack.sim.enqueue({ content: "third answer" });
      events = await turn(t.client, id, "three");
    }
    expect(doneOf(events).finalText).toBe("third answer");
    const users = (await t.client.getSession({ id })).messages
      .map((m) => JSON.parse(m.messageJson) as { role: string; content: string })
      .filter((m) => m.role === "user")
      .map((m) => m.content);
    expect(users.slice(0, 3)).toEqual(["one", "two", "three"]);
  });

  it("a killed inferproxy fails the turn naming inferproxy and its socket, after waiting peer_wait_ms for it", async () => {
    const id = await newSession(t.client, "dead proxy");
    await t.stack.kill("inferproxy");
    const started = performance.now();
    const failed = (await turn(t.client, id, "hello")).at(-1)!;
    expect(failed.event.case).toBe("turnFailed");
    if (failed.event.case !== "turnFailed") return;
    expect(failed.event.value.code).toBe("UNAVAILABLE");
    // SIGKILL leaves the socket file: nothing listens on it.
    expect(failed.event.value.message).toContain(
      `inferproxy at ${t.stack.sockets.inferproxy} did not come back within`,
    );
    expect(failed.event.value.message).toContain("ECONNREFUSED");
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_900);
    await t.stack.startDaemon("inferproxy");
  });

  it("inferproxy SIGKILLed mid-turn and restarted: the next turn succeeds at its first try", async () => {
    const id = await newSession(t.client, "proxy restart");
    t.stack.sim.reset();
    t.stack.sim.enqueue({ content: "first answer" });
    doneOf(await turn(t.client, id, "one"));
    t.stack.sim.enqueue({ content: Array.from({ length: 200 }, (_, i) => `w${i} `), tokenDelayMs: 20 });
    const { generating, events } = startTurn(t.client, id, "two");
    await generating;
    await t.stack.kill("inferproxy");
    // Killed while generating: the socket file stays; the test restarts it, as systemd would.
    await t.stack.startDaemon("inferproxy");
    // The cut turn is sent again to the new inferproxy or ends; either way it ends.
    await events;
    t.stack.sim.reset();
    t.stack.sim.enqueue({ content: "back again" });
    expect(doneOf(await turn(t.client, id, "three")).finalText).toBe("back again");
  });

  it("brokerd SIGKILLed and restarted: the next turn's tool call runs", async () => {
    const id = await newSession(t.client, "broker restart");
    t.stack.sim.reset();
    t.stack.sim.enqueue({ toolCalls: [{ id: "l1", name: "list_dir", arguments: '{"path":"."}' }] });
    t.stack.sim.enqueue({ content: "listed" });
    doneOf(await turn(t.client, id, "list once"));
    await t.stack.kill("brokerd");
    await t.stack.startDaemon("brokerd");
    t.stack.sim.enqueue({ toolCalls: [{ id: "l2", name: "list_dir", arguments: '{"path":"."}' }] });
    t.stack.sim.enqueue({ content: "listed again" });
    const events = await turn(t.client, id, "list again");
    const result = events.find((e) => e.event.case === "toolResult");
    expect(result?.event.value).toMatchObject({ callId: "l2", isError: false });
    expect(doneOf(events).finalText).toBe("listed again");
  });

  it("a killed brokerd turns the tool call into an error result the model sees; the turn goes on", async () => {
    const id = await newSession(t.client, "dead broker");
    await t.stack.kill("brokerd");
    t.stack.sim.enqueue({ toolCalls: [{ id: "c1", name: "list_dir", arguments: '{"path":"."}' }] });
    t.stack.sim.enqueue({ content: "I could not list the directory." });
    const events = await turn(t.client, id, "list files");
    const result = events.find((e) => e.event.case === "toolResult");
    expect(result?.event.value).toMatchObject({ callId: "c1", isError: true });
    // Waited for (peer_wait_ms), then named: which daemon, which socket, what a connect there gets.
    expect(result?.event.case === "toolResult" && result.event.value.content).toContain(
      `brokerd at ${t.stack.sockets.brokerd} did not come back within`,
    );
    expect(doneOf(events).finalText).toBe("I could not list the directory.");
    await t.stack.startDaemon("brokerd");
  });

  it("malformed tool-call arguments go back to the model as a tool error", async () => {
    const id = await newSession(t.client, "bad args");
    t.stack.sim.enqueue({ toolCalls: [{ id: "b1", name: "read_file", arguments: '{"path": "x.txt"' }] });
    t.stack.sim.enqueue({ content: "Let me fix that." });
    const events = await turn(t.client, id, "read x.txt");
    const result = events.find((e) => e.event.case === "toolResult");
    expect(result?.event.value).toMatchObject({ callId: "b1", isError: true });
    expect(result?.event.case === "toolResult" && result.event.value.content).toMatch(/not valid JSON/);
    expect(doneOf(events).finishReason).toBe("stop");
  });
});
