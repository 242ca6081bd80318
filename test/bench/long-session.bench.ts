// What a long conversation costs per request beyond what it costs the server:
// time to first token through the stack minus the same request sent straight
// to the simulator, for a ~1k-token session and a ~200k-token one. The
// difference between the two is work loopd and inferproxy do that grows with
// the conversation (parsing, serialising, copying, scanning the history).
//
// The simulator runs as its own process here: in this process its
// post-response bookkeeping for a 200k-token prompt (re-tokenising the slot)
// would hold up the client's reading of the first event and be counted as
// stack time.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Agent, request } from "undici";
import { SessionLog } from "../../services/loopd/dist/sessions/session-log.js";
import { foldRecords } from "../../services/loopd/dist/sessions/session-state.js";
import { buildMessagesJson } from "../../services/loopd/dist/sessions/epoch-view.js";
import { buildCompletionBody, completionInput } from "../../services/inferproxy/dist/completion/request-shaping.js";
import { Stack, repoRoot, waitFor } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { directFirstContent, monotonicMs } from "./direct-request.js";
import { loopClient, newSession } from "../support/loop-client.js";
import { p50 } from "./stats.mjs";
import { createHash } from "node:crypto";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 150;

const now = () => performance.now();
const N_CTX = 262_144;
// Before each timed request: the previous one's after-effects (the simulator re-reading a 200k
// prompt into its slot, a collection in a daemon) finish instead of landing in the next sample.
const settle = () => new Promise((r) => setTimeout(r, 40));

export default async function (emit: Emit): Promise<void> {
  const tmp = tempDir("bxb-ls-");
  const llamaSock = join(tmp.dir, "sim.sock");
  const sim = spawn(
    process.execPath,
    [join(repoRoot, "test/llama-sim/dist/main.js"), "--socket", llamaSock, "--n-ctx", String(N_CTX)],
    { stdio: "ignore" },
  );
  await waitFor(() => existsSync(llamaSock), 10_000, "llama-sim");
  const agent = new Agent({ connect: { socketPath: llamaSock } });
  const props = JSON.parse(await (await request("http://localhost/props", { dispatcher: agent })).body.text());
  const contract = {
    template_sha256: createHash("sha256").update(props.chat_template).digest("hex"),
    n_ctx_per_slot: props.default_generation_settings.n_ctx,
    total_slots: props.total_slots,
  };
  const stack = await new Stack(tmp.dir, {
    upstream: { socketPath: llamaSock, contract },
    loopd: { budgets: { max_total_tokens: 10_000_000 } },
  }).start();
  let client = loopClient(stack.sockets.loopd);
  const sessionsDir = join(tmp.dir, "state", "loopd", "sessions");
  try {
    const small = await newSession(client, "small");
    const large = await newSession(client, "large");
    // Grow the large session on disk while loopd is down, as a year of use would have.
    client.close();
    await stack.kill("loopd", "SIGTERM");
    const tokens = grow(sessionsDir, large, 200_000);
    await stack.startDaemon("loopd");
    client = loopClient(stack.sockets.loopd);

    // Where the time goes, on one clock (monotonic ms): the client's send, the request's arrival
    // at the simulator, its first content token written, and the client's first content event.
    const simRequests = async () =>
      JSON.parse(await (await request("http://localhost/__sim/requests", { dispatcher: agent })).body.text()) as {
        monotonicOffsetMs: number;
        requests: { path: string; receivedHrMs: number; firstContentHrMs?: number }[];
      };
    const lastCompletion = async () => {
      const r = await simRequests();
      const c = r.requests.filter((x) => x.path === "/v1/chat/completions").at(-1)!;
      return {
        arrived: r.monotonicOffsetMs + c.receivedHrMs,
        firstWritten: r.monotonicOffsetMs + (c.firstContentHrMs ?? 0),
      };
    };
    const wall = monotonicMs;
    const measure = async (id: string, label: string) => {
      const added: number[] = [];
      const stages = { request: [] as number[], server: [] as number[], back: [] as number[] };
      const direct = { request: [] as number[], server: [] as number[], back: [] as number[] };
      for (let i = 0; i < 25; i++) {
        await settle();
        const t0 = now();
        const w0 = wall();
        let first = 0;
        let wFirst = 0;
        for await (const ev of client.send({ sessionId: id, text: `question ${i}` })) {
          if (!first && ev.event.case === "content") {
            first = now() - t0;
            wFirst = wall();
          }
          if (ev.event.case === "turnFailed") throw new Error(ev.event.value.message);
        }
        const s = await lastCompletion();
        if (i >= 5) {
          stages.request.push(s.arrived - w0);
          stages.server.push(s.firstWritten - s.arrived);
          stages.back.push(wFirst - s.firstWritten);
        }
        // The same request straight to the server: the log's messages up to this turn's user message.
        const body = directBody(join(sessionsDir, `${id}.jsonl`));
        await settle();
        const dw0 = wall();
        const { ms: directFirst, monoAt: dwFirst } = await directFirstContent(agent, body);
        const ds = await lastCompletion();
        if (i >= 5) {
          added.push(first - directFirst);
          direct.request.push(ds.arrived - dw0);
          direct.server.push(ds.firstWritten - ds.arrived);
          direct.back.push(dwFirst - ds.firstWritten);
        }
      }
      for (const k of ["request", "server", "back"] as const) {
        emit(`stage_${k}_ms_p50_${label}`, p50(stages[k]), "ms");
        emit(`stage_${k}_direct_ms_p50_${label}`, p50(direct[k]), "ms");
      }
      return p50(added);
    };
    const addedSmall = await measure(small, "1k");
    const addedLarge = await measure(large, "200k");
    emit("session_tokens_large", tokens, "tokens");
    emit("ttft_added_ms_p50_1k", addedSmall, "ms");
    emit("ttft_added_ms_p50_200k", addedLarge, "ms");
    emit("added_per_request_200k_minus_1k_ms", addedLarge - addedSmall, "ms");
  } finally {
    client.close();
    await agent.close();
    await stack.stop();
    sim.kill("SIGTERM");
    await once(sim, "exit");
    tmp.cleanup();
  }
}

/** What loopd sent for the session's last turn: every message of the epoch but the answer. */
function directBody(logPath: string): string {
  const { log, records } = SessionLog.open(logPath);
  log.close();
  const st = foldRecords(records);
  st.history.pop(); // the assistant answer that request produced
  return buildCompletionBody(
    completionInput({
      slot: 0,
      messagesJson: buildMessagesJson(st),
      toolsJson: st.epoch.toolsJson,
      maxTokens: 64,
    }),
    { sampling: { temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0 }, maxTokens: 64, totalSlots: 3 },
  );
}

/** Appends user/assistant exchanges to a session's log until it holds about `target` tokens (4 bytes a token). */
function grow(dir: string, id: string, target: number): number {
  const { log } = SessionLog.open(join(dir, `${id}.jsonl`));
  const para =
    "The log shows the service restarted after the config change; the next step is to compare the two builds. ";
  let bytes = 0;
  let i = 0;
  log.append({ t: "turn_start", turn: 1, at: Date.now() });
  while (bytes / 4 < target) {
    const user = JSON.stringify({ role: "user", content: `Part ${i}: ${para.repeat(8)}` });
    const assistant = JSON.stringify({ role: "assistant", content: `Noted part ${i}. ${para.repeat(8)}` });
    log.append({ t: "message", epoch: 0, json: user, at: Date.now() });
    log.append({ t: "message", epoch: 0, json: assistant, at: Date.now() });
    bytes += user.length + assistant.length;
    i++;
  }
  log.append({ t: "turn_end", turn: 1, reason: "stop", at: Date.now() });
  log.close();
  return Math.round(bytes / 4);
}
