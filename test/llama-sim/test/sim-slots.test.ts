// The simulator beyond the recordings: reasoning control, slots, the admin API and the CLI.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Agent, request } from "undici";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "@boxmaker/llama-sim";
import { contentOf, timingsOf } from "./helpers.js";

import { SYSTEM, assistantFrom, req, useSimClients, type Chunk } from "./sim-fixtures.js";

const client = useSimClients();

describe("reasoning control", () => {
  it("reasoning_end switches a running completion from reasoning to content", async () => {
    const c = await client();
    c.sim.enqueue({ reasoning: Array.from({ length: 100 }, () => " hmm"), content: "Final answer.", tokenDelayMs: 10 });
    let reply: string | undefined;
    let n = 0;
    const r = await c.stream(
      req([SYSTEM, { role: "user", content: "Think." }], { reasoning_control: true }),
      async (e) => {
        if (e === "[DONE]") return;
        const o = JSON.parse(e) as Chunk;
        if (o.choices?.[0]?.delta.reasoning_content && ++n === 5) {
          reply = (await c.send("POST", "/v1/chat/completions/control", { id: o.id, action: "reasoning_end" })).text;
        }
      },
    );
    expect(reply).toBe('{"success":true}');
    const reasoning = contentOf(r.events, "reasoning_content");
    expect(reasoning.length).toBeLessThan(100 * 4);
    expect(contentOf(r.events)).toBe("Final answer.");
    expect(c.sim.controlCalls.at(-1)).toMatchObject({ action: "reasoning_end", status: 200 });
    // The cache now holds the cut reasoning, as the client will echo it.
    expect(c.sim.slotTokens(0).join("")).toContain(`<think>\n${reasoning}\n</think>`);
  });

  it("refuses when the completion was sent without reasoning_control, and for unknown ids and actions", async () => {
    const c = await client();
    c.sim.enqueue({ reasoning: Array.from({ length: 50 }, () => " hmm"), tokenDelayMs: 5 });
    let reply: string | undefined;
    await c.stream(req([{ role: "user", content: "Think." }]), async (e) => {
      if (e === "[DONE]") return;
      const o = JSON.parse(e) as Chunk;
      if (o.choices?.[0]?.delta.reasoning_content && !reply) {
        reply = (await c.send("POST", "/v1/chat/completions/control", { id: o.id, action: "reasoning_end" })).text;
      }
    });
    expect(JSON.parse(reply!).success).toBe(false);
    const unknown = await c.send("POST", "/v1/chat/completions/control", {
      id: "chatcmpl-nope",
      action: "reasoning_end",
    });
    expect(unknown.status).toBe(200);
    expect(unknown.text).toBe('{"success":false,"message":"no active completion for this id"}');
    const bad = await c.send("POST", "/v1/chat/completions/control", { id: "chatcmpl-nope", action: "stop_now" });
    expect(bad.status).toBe(400);
  });
});

describe("slots", () => {
  it("GET /slots shows the running task live: n_decoded rises while quiet (busy), stands still while silent (hung)", async () => {
    const c = await client();
    type S = { id: number; is_processing: boolean; id_task?: number; next_token?: Array<{ n_decoded: number }> };
    const slot0 = async () => (JSON.parse((await c.send("GET", "/slots")).text) as S[])[0]!;
    const watch = async (turn: Record<string, unknown>) => {
      c.sim.enqueue(turn);
      const seen: S[] = [];
      let polling = true;
      const poll = (async () => {
        while (polling) {
          const s = await slot0();
          if (s.is_processing) seen.push(s);
          await new Promise((r) => setTimeout(r, 60));
        }
      })();
      await c.stream(req([SYSTEM, { role: "user", content: "x" }], { id_slot: 0 }));
      polling = false;
      await poll;
      return seen;
    };
    const quiet = await watch({ content: ["a", "b"], quietMs: 400, quietAfterTokens: 1 });
    const q = quiet.map((s) => s.next_token![0]!.n_decoded);
    expect(q.length).toBeGreaterThanOrEqual(3);
    expect(q.at(-1)!).toBeGreaterThan(q[0]!);
    expect(new Set(quiet.map((s) => s.id_task)).size).toBe(1);
    const hung = await watch({ content: ["a", "b"], silenceMs: 400, silenceAfterTokens: 1 });
    expect(hung.length).toBeGreaterThanOrEqual(3);
    expect(new Set(hung.map((s) => s.next_token![0]!.n_decoded)).size).toBe(1);
    expect(hung[0]!.id_task).not.toBe(quiet[0]!.id_task);
  });

  it("save, erase and restore bring back the cached prefix", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "llama-sim-save-"));
    const c = await client({ slotSavePath: dir });
    const history: ChatMessage[] = [SYSTEM, { role: "user", content: "Remember this." }];
    c.sim.enqueue({ content: "Remembered." });
    const echo = assistantFrom((await c.stream(req(history, { id_slot: 1 }))).events);
    const held = c.sim.slotTokens(1).length;

    const save = JSON.parse((await c.send("POST", "/slots/1?action=save", { filename: "s.bin" })).text);
    expect(save).toMatchObject({ id_slot: 1, filename: "s.bin", n_saved: held });
    expect(existsSync(path.join(dir, "s.bin"))).toBe(true);
    expect(JSON.parse((await c.send("POST", "/slots/1?action=erase")).text)).toEqual({ id_slot: 1, n_erased: held });
    expect(c.sim.slotTokens(1)).toHaveLength(0);
    const restore = JSON.parse((await c.send("POST", "/slots/1?action=restore", { filename: "s.bin" })).text);
    expect(restore).toMatchObject({ id_slot: 1, filename: "s.bin", n_restored: held, n_read: save.n_written });

    c.sim.enqueue({ content: "ok" });
    const t = timingsOf(
      (await c.stream(req([...history, echo, { role: "user", content: "Go on" }], { id_slot: 1 }))).events,
    )!;
    expect(t.cache_n).toBe(held);

    const missing = await c.send("POST", "/slots/0?action=restore", { filename: "missing.bin" });
    expect(missing.status).toBe(400);
    writeFileSync(path.join(dir, "junk.bin"), "junk");
    expect((await c.send("POST", "/slots/0?action=restore", { filename: "junk.bin" })).status).toBe(400);
    expect((await c.send("POST", "/slots/0?action=save", { filename: "../escape.bin" })).status).toBe(400);
  });

  it("slot actions need a slot save path, like the real server", async () => {
    const c = await client();
    expect((await c.send("POST", "/slots/0?action=save", { filename: "a.bin" })).status).toBe(501);
  });

  it("id_slot wraps around; without it the least recently used idle slot is taken", async () => {
    const c = await client();
    await c.stream(req([{ role: "user", content: "a" }], { id_slot: 4 }));
    expect(c.sim.completions.at(-1)!.slot).toBe(1);
    const { id_slot: _drop, ...noSlot } = req([{ role: "user", content: "b" }]);
    await c.stream(noSlot);
    expect(c.sim.completions.at(-1)!.slot).toBe(0);
    await c.stream(noSlot);
    expect(c.sim.completions.at(-1)!.slot).toBe(2);
    await c.stream(noSlot);
    expect(c.sim.completions.at(-1)!.slot).toBe(1);
  });

  it("requests for a busy slot wait their turn; maxConcurrentPerSlot shows the overlap", async () => {
    const c = await client();
    c.sim.enqueue({ content: ["a1", "a2", "a3", "a4"], tokenDelayMs: 20 }, 0);
    c.sim.enqueue({ content: ["b1", "b2"] }, 0);
    c.sim.enqueue({ content: ["c1"] }, 2);
    const order: string[] = [];
    const log = (tag: string) => (e: string) => {
      if (e === "[DONE]") order.push(`${tag}:done`);
      else {
        const d = (JSON.parse(e) as Chunk).choices?.[0]?.delta.content;
        if (typeof d === "string") order.push(d);
      }
    };
    const a = c.stream(req([{ role: "user", content: "first" }]), log("a"));
    await new Promise((r) => setTimeout(r, 10));
    const b = c.stream(req([{ role: "user", content: "second" }]), log("b"));
    const other = c.stream(req([{ role: "user", content: "other" }], { id_slot: 2 }));
    await Promise.all([a, b, other]);
    expect(order.filter((x) => !x.startsWith("c"))).toEqual(["a1", "a2", "a3", "a4", "a:done", "b1", "b2", "b:done"]);
    expect(c.sim.maxConcurrentPerSlot).toEqual([2, 0, 1]);
  });

  it("GET /slots reports per-slot n_ctx and is_processing", async () => {
    const c = await client({ totalSlots: 2, nCtx: 4096 });
    c.sim.enqueue({ content: Array.from({ length: 30 }, () => "x"), tokenDelayMs: 10 });
    const running = c.stream(req([{ role: "user", content: "x" }], { id_slot: 1 }));
    await new Promise((r) => setTimeout(r, 60));
    const slots = JSON.parse((await c.send("GET", "/slots")).text);
    expect(
      slots.map((s: { id: number; n_ctx: number; is_processing: boolean }) => [s.id, s.n_ctx, s.is_processing]),
    ).toEqual([
      [0, 4096, false],
      [1, 4096, true],
    ]);
    await running;
    const props = JSON.parse((await c.send("GET", "/props")).text);
    expect(props.total_slots).toBe(2);
    expect(props.default_generation_settings.n_ctx).toBe(4096);
  });
});

describe("admin HTTP API", () => {
  it("scripts turns, reads the log, toggles loading and resets", async () => {
    const c = await client();
    const s = await c.send("POST", "/__sim/script", { turns: [{ content: "scripted over HTTP" }], slot: 0 });
    expect(JSON.parse(s.text)).toEqual({ queued: 1, pending: 1 });
    expect((await c.send("POST", "/__sim/script", { contnet: "typo" })).status).toBe(400);
    const r = await c.stream(req([{ role: "user", content: "x" }]));
    expect(contentOf(r.events)).toBe("scripted over HTTP");
    await c.send("POST", "/v1/chat/completions/control", { id: "nope", action: "reasoning_end" });
    const log = JSON.parse((await c.send("GET", "/__sim/requests")).text);
    expect(log.requests.find((e: { path: string }) => e.path === "/v1/chat/completions").slot).toBe(0);
    expect(log.controlCalls).toHaveLength(1);
    await c.send("POST", "/__sim/loading", { loading: true });
    expect((await c.send("GET", "/health")).status).toBe(503);
    await c.send("POST", "/__sim/loading", { loading: false });
    const state = JSON.parse((await c.send("GET", "/__sim/state")).text);
    expect(state.slots[0].nTokens).toBeGreaterThan(0);
    await c.send("POST", "/__sim/reset");
    expect(c.sim.requests).toHaveLength(0);
    expect(c.sim.slotTokens(0)).toHaveLength(0);
  });
});

const mainJs = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist/main.js");

describe("CLI", () => {
  it.skipIf(!existsSync(mainJs))(
    "listens on a socket, takes a script file, removes its socket on SIGTERM",
    async () => {
      const dir = mkdtempSync(path.join(tmpdir(), "llama-sim-cli-"));
      const socketPath = path.join(dir, "llama.sock");
      writeFileSync(socketPath, "stale");
      const script = path.join(dir, "script.json");
      writeFileSync(script, JSON.stringify([{ content: "from the script file" }]));
      const child = spawn(process.execPath, [mainJs, "--socket", socketPath, "--slots", "2", "--script", script], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      const line = await new Promise<string>((resolve, reject) => {
        child.stdout.once("data", (b: Buffer) => resolve(b.toString()));
        child.once("exit", (code) => reject(new Error(`exited ${code}`)));
      });
      expect(line).toContain(`listening on unix:${socketPath}`);
      const agent = new Agent({ connect: { socketPath } });
      const res = await request("http://localhost/v1/chat/completions", {
        method: "POST",
        dispatcher: agent,
        body: JSON.stringify({ messages: [{ role: "user", content: "hi" }], stream: false }),
      });
      expect((await res.body.json()) as unknown).toMatchObject({
        choices: [{ message: { content: "from the script file" } }],
      });
      await agent.close();
      const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exit).toBe(0);
      expect(existsSync(socketPath)).toBe(false);
    },
  );
});
