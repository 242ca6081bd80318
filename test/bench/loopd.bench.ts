// loopd's figures: how many prompt tokens the server had to process versus
// the tokens that were really new (1.00 = perfect cache reuse), the cost of a
// durable log append, and loopd's own added latency per turn.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { countTokens, renderPrompt, type ChatMessage } from "@boxmaker/llama-sim";
import { createClient, InferService } from "@boxmaker/common";
import { SessionLog } from "../../services/loopd/dist/sessions/session-log.js";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";
import { nowMs, p50, p99 } from "./stats.mjs";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 60;

export default async function (emit: Emit): Promise<void> {
  const tmp = tempDir("bxl-");
  try {
    logAppend(tmp.dir, emit);
    await session(tmp.dir, emit);
  } finally {
    tmp.cleanup();
  }
}

function logAppend(dir: string, emit: Emit): void {
  const { log } = SessionLog.open(join(dir, "bench", "log.jsonl"));
  const json = JSON.stringify({ role: "assistant", content: "x".repeat(600), reasoning_content: "y".repeat(400) });
  const t: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const t0 = nowMs();
    log.append({ t: "message", epoch: 0, json, at: Date.now() });
    t.push(nowMs() - t0);
  }
  log.close();
  emit("log_append_fsync_ms_p50", p50(t), "ms");
  emit("log_append_fsync_ms_p99", p99(t), "ms");
}

async function session(dir: string, emit: Emit): Promise<void> {
  const stack = await new Stack(join(dir, "s")).start();
  const client = loopClient(stack.sockets.loopd);
  const infer = createClient(InferService, stack.sockets.inferproxy);
  try {
    writeFileSync(join(stack.workspace, "data.txt"), "alpha\nbeta\n");
    const id = await newSession(client, "bench");
    for (let i = 0; i < 20; i++) {
      stack.sim.enqueue({
        reasoning: "Look first.",
        toolCalls: [{ name: "read_file", arguments: '{"path":"data.txt"}' }],
      });
      stack.sim.enqueue({ reasoning: "Answer now.", content: `Answer ${i}.` });
      doneOf(await turn(client, id, `Question ${i}?`));
    }
    // Processed versus truly new, from the requests themselves.
    const reqs = stack.sim.completions;
    let processed = 0;
    let fresh = 0;
    for (let k = 1; k < reqs.length; k++) {
      const prev = reqs[k - 1]!.body as { messages: ChatMessage[]; tools: unknown[] };
      const cur = reqs[k]!.body as { messages: ChatMessage[]; tools: unknown[] };
      const held = countTokens(
        renderPrompt([...prev.messages, cur.messages[prev.messages.length]!], prev.tools, {
          addGenerationPrompt: false,
        }).text,
      );
      fresh += countTokens(renderPrompt(cur.messages, cur.tools).text) - held;
      processed += reqs[k]!.timings!.prompt_n;
    }
    emit("prompt_tokens_over_new_ratio", processed / fresh, "x");
    emit("prompt_tokens_sent_per_request_avg", reqs.reduce((a, r) => a + r.promptTokens!, 0) / reqs.length, "tokens");
    emit("prompt_tokens_new_per_request_avg", fresh / (reqs.length - 1), "tokens");

    // loopd's own latency: a one-request turn through loopd versus the same request to inferproxy.
    const over: number[] = [];
    for (let i = 0; i < 30; i++) {
      const sid = await newSession(client, `o${i}`);
      stack.sim.enqueue({ content: "ok" });
      let t0 = nowMs();
      doneOf(await turn(client, sid, "hello"));
      const viaLoopd = nowMs() - t0;
      const body = stack.sim.completions.at(-1)!.body as { messages: unknown[]; tools: unknown[] };
      stack.sim.enqueue({ content: "ok" });
      t0 = nowMs();
      for await (const _ of infer.complete({
        slot: 0,
        messagesJson: JSON.stringify(body.messages),
        toolsJson: JSON.stringify(body.tools),
      })) {
        /* drain */
      }
      const direct = nowMs() - t0;
      if (i >= 5) over.push(viaLoopd - direct);
    }
    emit("turn_overhead_ms_p50", p50(over), "ms");
    emit("turn_overhead_ms_p99", p99(over), "ms");
  } finally {
    client.close();
    infer.close();
    await stack.stop();
  }
}
