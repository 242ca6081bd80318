import { describe, expect, it } from "vitest";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { RpcError, Status, type SessionEvent } from "@boxmaker/common";
import { waitFor } from "../support/stack.js";
import { useStack } from "../support/use-stack.js";
import { doneOf, loopClient, newSession } from "../support/loop-client.js";

/**
 * An error reply echoes its request (no proposal <id>, no session <id>). With
 * a 200 kB id the echo went into the reply's trailers past HTTP/2's header
 * limit: the connection between loopd and brokerd was torn down, and with it
 * every other session's call in flight on it. Error texts are bounded where
 * they become a gRPC status, so one client's hostile request fails alone.
 */
describe("a hostile 200 kB id while another session's tool call runs", () => {
  const t = useStack("bxh-", { brokerd: { policy: { defaults: { exec: "allow" } } } });

  it("is refused with a bounded message, and the other session's call completes", async () => {
    const ws = t.stack.workspace;
    const a = await newSession(t.client, "busy");
    // The command runs until the test lets it finish: it is in flight, on loopd's connection to brokerd,
    // for as long as the hostile calls take, with no clock deciding that.
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
    const events = (async () => {
      const out: SessionEvent[] = [];
      for await (const ev of t.client.send({ sessionId: a, text: "run it" })) out.push(ev);
      return out;
    })();
    // brokerd is running the command (it made this file) while the hostile calls go.
    await waitFor(() => existsSync(join(ws, "started")), 30_000, "the command to start");

    // Another client, as another person's CLI would be: its connection to loopd is its own.
    const other = loopClient(t.stack.sockets.loopd);
    const huge = "p".repeat(200_000);
    const hostile: Array<[string, () => Promise<unknown>]> = [
      ["DecideProposal", () => other.decideProposal({ id: huge, approve: true })],
      ["DecideProposal (reject)", () => other.decideProposal({ id: `x\n${huge}`, approve: false })],
      ["ListChanges", () => other.listChanges({ sessionId: huge })],
      ["GetSession", () => other.getSession({ id: huge })],
      ["RenameSession", () => other.renameSession({ id: huge, title: "x" })],
    ];
    const refusals: Array<[string, unknown]> = [];
    for (const [what, call] of hostile) {
      refusals.push([
        what,
        await call().then(
          () => undefined,
          (e: unknown) => e,
        ),
      ]);
    }
    other.close();
    writeFileSync(join(ws, "go"), "");
    const out = await events;
    const result = out.find((e) => e.event.case === "toolResult");
    expect(result?.event.case === "toolResult" && result.event.value.isError).toBe(false);
    expect(result?.event.case === "toolResult" && result.event.value.content).toContain("finished");
    expect(doneOf(out).finalText).toBe("The command finished.");
    for (const [what, err] of refusals) {
      expect(err, what).toBeInstanceOf(RpcError);
      const e = err as RpcError;
      // Refused for what it is, not a lost connection.
      expect(
        [Status.NOT_FOUND, Status.INVALID_ARGUMENT, Status.FAILED_PRECONDITION],
        `${what}: ${e.statusName} ${e.message.slice(0, 200)}`,
      ).toContain(e.status);
      expect(e.message.length, what).toBeLessThanOrEqual(2_048);
      expect(e.message).toMatch(/…$/);
    }
    // loopd's connection to brokerd still serves.
    expect((await t.client.listProposals({})).proposals).toEqual([]);
  }, 60_000);
});
