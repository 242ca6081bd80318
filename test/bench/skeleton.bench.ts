// The walking skeleton's cost: a whole turn through loopd →
// inferproxy → simulator, versus the same completion sent straight to the
// simulator over its Unix socket.
import { Agent, request } from "undici";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";
import { p50, p99, nowMs } from "./stats.mjs";

type Emit = (metric: string, value: number, unit: string) => void;

const ANSWER = "The quick brown fox jumps over the lazy dog. ".repeat(4);

export default async function (emit: Emit): Promise<void> {
  const tmp = tempDir("bxb-");
  const stack = await new Stack(tmp.dir).start();
  const client = loopClient(stack.sockets.loopd);
  const agent = new Agent({ connect: { socketPath: stack.sockets.llama } });
  try {
    const direct: number[] = [];
    const through: number[] = [];
    const N = 40;
    for (let i = 0; i < N + 5; i++) {
      const text = `question ${i}`;
      // Through the stack: a fresh session each time so both paths send a cold, equal-sized prompt.
      const id = await newSession(client, `bench ${i}`);
      stack.sim.enqueue({ content: ANSWER });
      let t0 = nowMs();
      doneOf(await turn(client, id, text));
      const tStack = nowMs() - t0;
      // Straight to the simulator: the request loopd just made, replayed on the same slot after erasing it.
      const last = stack.sim.completions.at(-1)!;
      await request(`http://localhost/slots/0?action=erase`, { method: "POST", dispatcher: agent }).then((r) => r.body.dump());
      stack.sim.enqueue({ content: ANSWER });
      t0 = nowMs();
      const res = await request("http://localhost/v1/chat/completions", {
        method: "POST",
        dispatcher: agent,
        headers: { "content-type": "application/json" },
        body: last.rawBody,
      });
      const body = await res.body.text();
      const tDirect = nowMs() - t0;
      if (!body.includes("[DONE]")) throw new Error("direct request did not finish");
      await request(`http://localhost/slots/0?action=erase`, { method: "POST", dispatcher: agent }).then((r) => r.body.dump());
      if (i >= 5) {
        through.push(tStack);
        direct.push(tDirect);
      }
    }
    const added = through.map((t, i) => t - direct[i]!);
    emit("turn_ms_p50", p50(through), "ms");
    emit("direct_ms_p50", p50(direct), "ms");
    emit("turn_added_ms_p50", p50(added), "ms");
    emit("turn_added_ms_p99", p99(added), "ms");
    emit("turn_over_direct_ratio", p50(through) / p50(direct), "x");
  } finally {
    client.close();
    await agent.close();
    await stack.stop();
    tmp.cleanup();
  }
}
