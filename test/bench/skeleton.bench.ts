// The walking skeleton's cost: a whole turn through loopd → inferproxy →
// simulator, versus the same completion sent straight to the simulator over
// its Unix socket. Time to first token is the headline: the client's Send on
// loopd to its first content event, against the direct request to its first
// content chunk. The simulator runs in this process, so its arrival and
// first-write times share the bench's clock and split the chain into stages:
//   request path  Send → the request has arrived at llama-server
//                 (loopd accepts, appends durably, tools array, inferproxy shapes and sends)
//   server        arrival → first content token written (the same work in both paths)
//   return path   first content token written → the client's first content event
//                 (inferproxy parses SSE, gRPC to loopd, gRPC to the client)
// The wire floor (wire-floor.ts) is the same shape with none of the work: the
// stack's added time minus the floor's is what the daemons' own code costs.
import { Agent, request } from "undici";
import { directFirstContent } from "./direct-request.js";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { loopClient, newSession, type LoopClient } from "../support/loop-client.js";
import { p50, p99 } from "./stats.mjs";
import { WireFloor } from "./wire-floor.js";
import { cpuSeconds } from "../support/processes.js";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 120;

const ANSWER = "The quick brown fox jumps over the lazy dog. ".repeat(4);
const now = () => performance.now();

interface Sample {
  ttft: number;
  turn: number;
  requestPath: number;
  server: number;
  returnPath: number;
}

export default async function (emit: Emit): Promise<void> {
  const tmp = tempDir("bxb-");
  const stack = await new Stack(tmp.dir).start();
  const client = loopClient(stack.sockets.loopd);
  const floor = await new WireFloor(tmp.dir, stack.sockets.llama).start();
  const agent = new Agent({ connect: { socketPath: stack.sockets.llama } });
  const erase = () =>
    request(`http://localhost/slots/0?action=erase`, { method: "POST", dispatcher: agent }).then((r) => r.body.dump());
  try {
    const through: Sample[] = [];
    const direct: Sample[] = [];
    const floored: { first: number; end: number }[] = [];
    const daemons = ["loopd", "inferproxy", "brokerd"] as const;
    const pidOf = (d: (typeof daemons)[number]) => stack.daemons.get(d)!.proc.pid!;
    let cpuBefore: number[] = [];
    // Enough turns for a p99 to be one: with 60, the "p99" was the slowest turn of the run.
    const N = 200;
    // Made beforehand, so the daemons' CPU below is the turns' alone.
    const ids: string[] = [];
    for (let i = 0; i < N + 5; i++) ids.push(await newSession(client, `bench ${i}`));
    for (let i = 0; i < N + 5; i++) {
      if (i === 5) cpuBefore = daemons.map((d) => cpuSeconds(pidOf(d)));
      // Through the stack: a fresh session each time so both paths send a cold, equal-sized prompt.
      const id = ids[i]!;
      stack.sim.enqueue({ content: ANSWER });
      const s = await viaStack(client, id, `question ${i}`, () => stack.sim.completions.at(-1)!);
      // Straight to the simulator: the request loopd just made, replayed on the same slot after erasing it.
      const last = stack.sim.completions.at(-1)!;
      await erase();
      stack.sim.enqueue({ content: ANSWER });
      const d = await viaDirect(agent, last.rawBody, () => stack.sim.completions.at(-1)!);
      await erase();
      stack.sim.enqueue({ content: ANSWER });
      const f = await floor.request(last.rawBody, now);
      await erase();
      if (i >= 5) {
        through.push(s);
        direct.push(d);
        floored.push(f);
      }
    }
    // What each daemon spent per turn (its CPU over the measured turns; the direct and floor
    // requests in between do not reach it): the work behind the figures above.
    for (const [i, d] of daemons.entries())
      emit(`cpu_ms_per_turn_${d}`, ((cpuSeconds(pidOf(d)) - cpuBefore[i]!) * 1000) / N, "ms");
    const col = (xs: Sample[], k: keyof Sample) => xs.map((x) => x[k]);
    const added = (k: keyof Sample) => through.map((t, i) => t[k] - direct[i]![k]);
    emit("ttft_ms_p50", p50(col(through, "ttft")), "ms");
    emit("direct_ttft_ms_p50", p50(col(direct, "ttft")), "ms");
    emit("ttft_added_ms_p50", p50(added("ttft")), "ms");
    emit("ttft_added_ms_p99", p99(added("ttft")), "ms");
    emit("turn_ms_p50", p50(col(through, "turn")), "ms");
    emit("direct_ms_p50", p50(col(direct, "turn")), "ms");
    emit("turn_added_ms_p50", p50(added("turn")), "ms");
    emit("turn_added_ms_p99", p99(added("turn")), "ms");
    emit("turn_over_direct_ratio", p50(col(through, "turn")) / p50(col(direct, "turn")), "x");
    emit("stage_request_path_ms_p50", p50(col(through, "requestPath")), "ms");
    emit("stage_request_path_direct_ms_p50", p50(col(direct, "requestPath")), "ms");
    emit("stage_server_ms_p50", p50(col(through, "server")), "ms");
    emit("stage_return_path_ms_p50", p50(col(through, "returnPath")), "ms");
    emit("stage_return_path_direct_ms_p50", p50(col(direct, "returnPath")), "ms");
    emit("floor_ttft_ms_p50", p50(floored.map((f) => f.first)), "ms");
    emit("floor_ttft_added_ms_p50", p50(floored.map((f, i) => f.first - direct[i]!.ttft)), "ms");
    emit("floor_turn_added_ms_p50", p50(floored.map((f, i) => f.end - direct[i]!.turn)), "ms");
    emit("ttft_over_floor_ms_p50", p50(through.map((t, i) => t.ttft - floored[i]!.first)), "ms");
    emit("turn_over_floor_ms_p50", p50(through.map((t, i) => t.turn - floored[i]!.end)), "ms");
  } finally {
    floor.stop();
    client.close();
    await agent.close();
    await stack.stop();
    tmp.cleanup();
  }
}

type Entry = { receivedHrMs: number; firstContentHrMs?: number };

async function viaStack(client: LoopClient, sessionId: string, text: string, entry: () => Entry): Promise<Sample> {
  const t0 = now();
  let first = 0;
  for await (const ev of client.send({ sessionId, text })) {
    if (!first && ev.event.case === "content" && ev.event.value.text) first = now();
    if (ev.event.case === "turnFailed") throw new Error(ev.event.value.message);
  }
  return sample(t0, first, now(), entry());
}

async function viaDirect(agent: Agent, body: string, entry: () => Entry): Promise<Sample> {
  const t0 = now();
  const d = await directFirstContent(agent, body);
  return sample(t0, t0 + d.ms, t0 + d.endMs, entry());
}

function sample(t0: number, first: number, end: number, e: Entry): Sample {
  return {
    ttft: first - t0,
    turn: end - t0,
    requestPath: e.receivedHrMs - t0,
    server: (e.firstContentHrMs ?? e.receivedHrMs) - e.receivedHrMs,
    returnPath: first - (e.firstContentHrMs ?? first),
  };
}
