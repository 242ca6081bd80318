// Time to first token against a real llama-server: through the whole stack
// (the client's Send on loopd → first content event) versus the same request
// sent straight to the same server over its Unix socket (first content chunk).
// Both paths send byte-identical prompts that the slot already holds, so the
// difference is what the stack adds. Needs `npm run llama-server:build`;
// without it the bench says so and emits nothing.
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Agent } from "undici";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { directFirstContent } from "./direct-request.js";
import { loopClient, newSession } from "../support/loop-client.js";
import { RealLlama, contractOf, findRealLlama } from "../real/support/real-llama.js";
import { buildCompletionBody, completionInput } from "../../services/inferproxy/src/completion/request-shaping.js";
import { p50, p99, nowMs } from "./stats.mjs";
import type { BenchContext, Emit } from "./bench-context.js";

export const timeLimitS = 150;

const TEXT = "What does the README say about parking?";

export default async function (emit: Emit, { skip }: BenchContext): Promise<void> {
  if (!findRealLlama()) return skip("no real llama-server built (npm run llama-server:build)");
  const tmp = tempDir("bxb-r-");
  const llama = await new RealLlama({ model: "answer", socketPath: join(tmp.dir, "llama.sock") }).start();
  // Parking off: each iteration is a new session on slot 0, and saving the previous one to disk is not time to first token.
  const stack = await new Stack(tmp.dir, {
    upstream: { socketPath: llama.socketPath, contract: await contractOf(llama) },
    loopd: { parking: { enabled: false } },
  }).start();
  const client = loopClient(stack.sockets.loopd);
  const agent = new Agent({ connect: { socketPath: llama.socketPath } });
  try {
    const viaStack = async (): Promise<number> => {
      const id = await newSession(client, "bench");
      const t0 = nowMs();
      let first = 0;
      for await (const ev of client.send({ sessionId: id, text: TEXT })) {
        if (!first && ev.event.case === "content" && ev.event.value.text) first = nowMs() - t0;
      }
      return first;
    };
    // The body inferproxy builds for a fresh session: the session log's system message and
    // tools array, the user message, through inferproxy's own request shaping.
    await viaStack();
    const body = directBody(join(tmp.dir, "state", "loopd", "sessions"));
    const direct = async (): Promise<number> => (await directFirstContent(agent, body)).ms;
    const stackMs: number[] = [];
    const directMs: number[] = [];
    const N = 30;
    for (let i = 0; i < N + 3; i++) {
      const s = await viaStack();
      const d = await direct();
      if (i >= 3) {
        stackMs.push(s);
        directMs.push(d);
      }
    }
    const added = stackMs.map((t, i) => t - directMs[i]!);
    emit("ttft_stack_ms_p50", p50(stackMs), "ms");
    emit("ttft_direct_ms_p50", p50(directMs), "ms");
    emit("ttft_added_ms_p50", p50(added), "ms");
    emit("ttft_added_ms_p99", p99(added), "ms");
    emit("ttft_stack_over_direct_ratio", p50(stackMs) / p50(directMs), "x");
  } finally {
    client.close();
    await agent.close();
    await stack.stop();
    await llama.close();
    tmp.cleanup();
  }
}

function directBody(sessionsDir: string): string {
  const file = readdirSync(sessionsDir).find((f) => f.endsWith(".jsonl"))!;
  const recs = readFileSync(join(sessionsDir, file), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { rec: Record<string, string> }).rec);
  const epoch = recs.find((r) => r.t === "epoch")!;
  const user = recs.find((r) => r.t === "message" && r.json!.includes('"role":"user"'))!;
  return buildCompletionBody(
    completionInput({
      slot: 0,
      messagesJson: `[${epoch.system_json},${user.json}]`,
      toolsJson: epoch.tools_json!,
      maxTokens: 64,
    }),
    { sampling: { temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0 }, maxTokens: 64, totalSlots: 3 },
  );
}
