import { describe, expect, it } from "vitest";
import { createClient, InferService, RpcError, Status } from "@boxmaker/common";
import { useStack } from "../support/use-stack.js";
import { newSession, startTurn } from "../support/loop-client.js";

/**
 * #36 and the soak's findings: a turn that ends because a daemon stopped or
 * a connection between daemons broke says which, in the words the person
 * reads, instead of a bare "cancelled" or "UNAVAILABLE: Connection dropped".
 */
describe("a turn ended by the stack, not the person, names the cause", () => {
  const t = useStack("bxnc-", { loopd: { peer_wait_ms: 6_000 } });

  it("loopd stopping (SIGTERM) ends a running turn as cancelled with the reason, and run prints it", async () => {
    const id = await newSession(t.client, "stopping");
    t.stack.sim.reset();
    t.stack.sim.enqueue({ content: Array.from({ length: 300 }, (_, i) => `w${i} `), tokenDelayMs: 20 });
    const { generating, events } = startTurn(t.client, id, "a long answer please");
    await generating;
    await t.stack.kill("loopd", "SIGTERM");
    const last = (await events).at(-1)!.event;
    expect(last.case).toBe("turnDone");
    if (last.case !== "turnDone") return;
    expect(last.value.finishReason).toBe("cancelled");
    expect(last.value.cancelReason).toContain("loopd is stopping");
    await t.stack.startDaemon("loopd");

    // The same through `boxmaker run`: the person reads why, and the exit code is still "interrupted".
    t.stack.sim.reset();
    t.stack.sim.enqueue({ content: Array.from({ length: 300 }, (_, i) => `v${i} `), tokenDelayMs: 20 });
    const run = t.stack.cli(["run", "--session", id, "again, long"]);
    for (let i = 0; i < 200 && !t.stack.sim.completions.some((c) => c.outcome === undefined); i++)
      await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    await t.stack.kill("loopd", "SIGTERM");
    const r = await run;
    expect(r.stdout).toContain("turn cancelled: loopd is stopping");
    expect(r.code).toBe(5);
    await t.stack.startDaemon("loopd");
  });

  it("a connection between daemons that breaks mid-call is named: which daemon, which socket", async () => {
    // loopd's own client of inferproxy, as main.ts makes it: the peer named.
    const infer = createClient(InferService, t.stack.sockets.inferproxy, { peer: "inferproxy" });
    t.stack.sim.reset();
    // A prefill that takes seconds: the call is in inferproxy's hands, nothing streamed yet.
    t.stack.sim.enqueue({ content: "never", prefillMsPerBatch: 5_000 });
    const call = (async () => {
      for await (const _ of infer.complete({
        slot: 0,
        messagesJson: JSON.stringify([{ role: "user", content: "hello" }]),
        requestId: "named-1",
      }));
    })();
    const failed = call.then(
      () => undefined,
      (err: unknown) => err,
    );
    for (let i = 0; i < 200 && t.stack.sim.completions.length === 0; i++) await new Promise((r) => setTimeout(r, 25));
    await t.stack.kill("inferproxy");
    const err = await failed;
    infer.close();
    await t.stack.startDaemon("inferproxy");
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).status).toBe(Status.UNAVAILABLE);
    expect((err as RpcError).message).toMatch(/^Complete: the connection to inferproxy \(.*inferproxy\.sock\) broke: /);
  });
});
