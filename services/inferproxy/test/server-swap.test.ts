import { afterEach, describe, expect, it } from "vitest";
import { ErrorReason, Status } from "@boxmaker/common";
import { startLlamaSim, type LlamaSim } from "@boxmaker/llama-sim";
import { collect, startStack, userMessages, type Stack } from "./support/stack.js";

let s: Stack;
const extra: LlamaSim[] = [];
afterEach(async () => {
  for (const x of extra.splice(0)) await x.close();
  await s?.close();
});

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the self-test follows the server, not the poll", () => {
  it("a server swapped between two polls is checked on its first connection: refused, then accepted when swapped back", async () => {
    // No poll will see the swap: only the connection check can.
    s = await startStack({ config: { health_poll_ms: 600_000 } });
    s.sim.enqueue({ content: "first" });
    expect((await collect(s.client, { slot: 0, messagesJson: userMessages() })).final!.content).toBe("first");

    await s.sim.close();
    const other = await startLlamaSim({
      socketPath: s.llamaSocket,
      chatTemplate: "{{ messages }}",
      modelPath: "other.gguf",
    });
    extra.push(other);
    other.enqueue({ content: "from the wrong model" });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    expect(r.error!.message).toMatch(
      /does not match the contract \(template_sha256: expected [0-9a-f]{12}…, server has [0-9a-f]{12}…\)\. To use it as it is: .*boxmaker contract accept.*\. It serves other\.gguf$/,
    );
    expect(r.error!.details).toMatchObject({ reason: ErrorReason.SELF_TEST_FAILED, model: "other.gguf" });
    expect(other.completions).toHaveLength(0);
    const st = await s.client.status({});
    expect(st.model).toBe("other.gguf");
    expect(st.selfTest).toMatchObject({ ran: true, passed: false });

    // Swapped back: the original server on the same socket is accepted again.
    await other.close();
    extra.pop();
    const back = await startLlamaSim({ socketPath: s.llamaSocket });
    extra.push(back);
    back.enqueue({ content: "second" });
    const ok = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(ok.error).toBeUndefined();
    expect(ok.final!.content).toBe("second");
    expect((await s.client.status({})).selfTest).toMatchObject({ ran: true, passed: true });
  });

  it("status does not claim a passed self-test while the server is down", async () => {
    s = await startStack();
    expect((await s.client.status({})).selfTest!.passed).toBe(true);
    await s.sim.close();
    const st = await until(
      () => s.client.status({}),
      (v) => v.serverState === "down",
    );
    expect(st.selfTest).toMatchObject({ ran: false, passed: false });
    const back = await startLlamaSim({ socketPath: s.llamaSocket });
    extra.push(back);
    const again = await until(
      () => s.client.status({}),
      (v) => v.serverState === "ok",
    );
    expect(again.selfTest).toMatchObject({ ran: true, passed: true });
  });
});
