import { afterEach, describe, expect, it } from "vitest";
import { Status } from "@boxmaker/common";
import { startLlamaSim } from "@boxmaker/llama-sim";
import { join } from "node:path";
import { collect, startProxy, startStack, userMessages, type Stack } from "./support/stack.js";
import { FakeUpstream } from "./support/fake-upstream.js";
import { recording } from "./support/recordings.js";
import { templateSha256 } from "../src/server-check/self-test.js";
import { tempDir } from "../../../test/support/tmp.js";

let s: Stack;
afterEach(async () => {
  await s?.close();
});

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("errors a caller can act on", () => {
  it("malformed messages_json → INVALID_ARGUMENT before anything is sent", async () => {
    s = await startStack();
    for (const messagesJson of ['{"role":"user"}', "not json", "[]"]) {
      const r = await collect(s.client, { slot: 0, messagesJson });
      expect(r.error?.status).toBe(Status.INVALID_ARGUMENT);
      expect(r.error!.message).toMatch(/messages_json/);
      expect(r.events).toHaveLength(0);
    }
    const r = await collect(s.client, { slot: 7, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.INVALID_ARGUMENT);
    expect(s.sim.completions).toHaveLength(0);
  });

  it("server down → UNAVAILABLE naming the socket", async () => {
    s = await startStack();
    await s.sim.close();
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.UNAVAILABLE);
    expect(r.error!.message).toContain(s.llamaSocket);
    expect(r.error!.details.errno).toMatch(/ENOENT|ECONNREFUSED/);
    expect(r.events).toHaveLength(0);
    const st = await s.client.status({});
    expect(st.serverState).toBe("down");
  });

  it("503 while loading → UNAVAILABLE with retry_after_ms", async () => {
    s = await startStack();
    s.sim.setLoading(true);
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.UNAVAILABLE);
    expect(r.error!.details.retryAfterMs).toBe(100);
    expect(r.error!.message).toMatch(/retry/);
  });

  it("context overflow → FAILED_PRECONDITION with n_prompt_tokens and n_ctx", async () => {
    s = await startStack({ sim: { nCtx: 1024 } });
    const r = await collect(s.client, { slot: 1, messagesJson: userMessages("word ".repeat(3000)) });
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    expect(r.error!.details.nCtx).toBe(1024);
    expect(r.error!.details.nPromptTokens).toBeGreaterThan(1024);
    expect(r.error!.message).toMatch(/prompt is \d+ tokens but slot 1 holds 1024/);
    expect(r.events).toHaveLength(0);
  });

  it("an error object inside the 200 stream → partial, then ABORTED with the server's message", async () => {
    s = await startStack();
    s.sim.enqueue({ content: ["a", "b", "c", "d"], errorInStream: { afterTokens: 2, message: "bad peg output" } });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.ABORTED);
    expect(r.error!.message).toContain("bad peg output");
    expect(r.cases.at(-1)).toBe("partial");
    expect(r.partial!.content).toBe("ab");
    expect(r.cases).not.toContain("final");
  });

  it("a connection dropped mid-stream → partial, then UNAVAILABLE", async () => {
    s = await startStack();
    s.sim.enqueue({ content: ["a", "b", "c"], dropAfterTokens: 2, tokenDelayMs: 5 });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.UNAVAILABLE);
    expect(r.error!.message).toMatch(/dropped the stream mid-completion/);
    expect(r.cases.at(-1)).toBe("partial");
    // "b" is written in the same tick as the drop and never leaves the simulator (Node corks it).
    expect(r.partial!.content).toBe("a");
  });
});

describe("what arrived before a crash is kept", () => {
  it("a chunk that lands right before the connection dies is in the partial", async () => {
    const tmp = tempDir("bxfk-");
    const fake = await new FakeUpstream(join(tmp.dir, "llama.sock")).start();
    const props = JSON.parse(recording("props").response.body);
    const p = await startProxy(tmp.dir, {
      upstream: { socket_path: fake.socketPath },
      contract: { template_sha256: templateSha256(props.chat_template), n_ctx_per_slot: 32768, total_slots: 3 },
    });
    try {
      fake.always("POST /v1/chat/completions", async (_q, res) => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        // Handed to the kernel (the write's callback), then the process "crashes" before the next token.
        await new Promise((r) =>
          res.write('data: {"id":"chatcmpl-x","choices":[{"index":0,"delta":{"content":"last words"}}]}\n\n', r),
        );
        res.socket!.destroy();
      });
      const r = await collect(p.client, { slot: 0, messagesJson: userMessages() });
      expect(r.error?.status).toBe(Status.UNAVAILABLE);
      expect(r.partial!.content).toBe("last words");
      expect(r.partial!.completionId).toBe("chatcmpl-x");
    } finally {
      await p.close();
      await fake.close();
      tmp.cleanup();
    }
  });
});

describe("self-test", () => {
  it("a server that breaks the contract is reported in Status and completions are refused", async () => {
    s = await startStack({
      config: { contract: { template_sha256: "0".repeat(64), n_ctx_per_slot: 32768, total_slots: 3 } },
    });
    const st = await s.client.status({});
    expect(st.selfTest).toMatchObject({ ran: true, passed: false, expectedTemplateSha256: "0".repeat(64) });
    expect(st.selfTest!.mismatches).toHaveLength(1);
    expect(st.selfTest!.mismatches[0]).toMatch(/template_sha256: expected 0{64}, server has [0-9a-f]{64}/);
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    expect(r.error!.message).toMatch(/does not match the contract/);
    expect(s.sim.completions).toHaveLength(0);
  });

  it("re-runs when llama-server comes back, and notices a changed template", async () => {
    s = await startStack();
    const first = await s.client.status({});
    expect(first.selfTest!.passed).toBe(true);
    await s.sim.close();
    await until(
      () => s.client.status({}),
      (st) => st.serverState === "down",
    );
    // The server comes back with another template on the same socket.
    const other = await startLlamaSim({ socketPath: s.llamaSocket, chatTemplate: "{{ messages }}", loading: true });
    try {
      await until(
        () => s.client.status({}),
        (st) => st.serverState === "loading",
      );
      other.setLoading(false);
      const st = await until(
        () => s.client.status({}),
        (v) => v.serverState === "ok" && v.selfTest!.checkedAtUnixMs > first.selfTest!.checkedAtUnixMs,
      );
      expect(st.selfTest!.passed).toBe(false);
      expect(st.selfTest!.mismatches[0]).toMatch(/^template_sha256: /);
      const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
      expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    } finally {
      await other.close();
    }
  });
});

describe("Status", () => {
  it("reports health, build, model, self-test and the server's slots", async () => {
    s = await startStack({ sim: { buildInfo: "b42-test", modelPath: "ornith.gguf" } });
    const st = await s.client.status({});
    expect(st).toMatchObject({
      serverState: "ok",
      buildInfo: "b42-test",
      model: "ornith.gguf",
      upstream: `unix:${s.llamaSocket}`,
    });
    expect(st.selfTest).toMatchObject({ ran: true, passed: true, actualNCtx: 32768, actualTotalSlots: 3 });
    expect(st.slots.map((x) => [x.id, x.nCtx, x.isProcessing, x.heldBy])).toEqual([
      [0, 32768, false, ""],
      [1, 32768, false, ""],
      [2, 32768, false, ""],
    ]);
  });
});
