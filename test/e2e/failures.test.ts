import { describe, expect, it } from "vitest";
import { startLlamaSim } from "@boxmaker/llama-sim";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";

/**
 * Parts of the system die; a person gets a clear error, the session loses
 * nothing and works again once the part is back.
 */
describe("failures along the path", () => {
  const t = useStack("bxf-");

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

  it("a killed inferproxy fails the turn clearly; restarted, the next turn succeeds", async () => {
    const id = await newSession(t.client, "dead proxy");
    await t.stack.kill("inferproxy");
    const failed = (await turn(t.client, id, "hello")).at(-1)!;
    expect(failed.event.case).toBe("turnFailed");
    if (failed.event.case === "turnFailed") expect(failed.event.value.code).toBe("UNAVAILABLE");
    await t.stack.startDaemon("inferproxy");
    t.stack.sim.enqueue({ content: "back again" });
    let events = await turn(t.client, id, "hello again");
    for (let i = 0; i < 50 && events.at(-1)?.event.case === "turnFailed"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      events = await turn(t.client, id, "hello again");
    }
    expect(doneOf(events).finalText).toBe("back again");
  });

  it("a killed brokerd turns the tool call into an error result the model sees; the turn goes on", async () => {
    const id = await newSession(t.client, "dead broker");
    await t.stack.kill("brokerd");
    t.stack.sim.enqueue({ toolCalls: [{ id: "c1", name: "list_dir", arguments: '{"path":"."}' }] });
    t.stack.sim.enqueue({ content: "I could not list the directory." });
    const events = await turn(t.client, id, "list files");
    const result = events.find((e) => e.event.case === "toolResult");
    expect(result?.event.value).toMatchObject({ callId: "c1", isError: true });
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
