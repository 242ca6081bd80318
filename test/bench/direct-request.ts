import { type Agent, request } from "undici";

/**
 * A chat-completions body sent straight to the server, as the benches' baseline:
 * how long (ms from the call) until the first content token arrived, that
 * moment on the machine's monotonic clock (`monotonicMs`, comparable with any
 * process's), and how long until the stream ended (`endMs`). The stream is
 * read to its end, so the server is idle again when this returns; one that
 * ends without `[DONE]` is an error.
 */
export async function directFirstContent(
  agent: Agent,
  body: string,
): Promise<{ ms: number; monoAt: number; endMs: number }> {
  const t0 = performance.now();
  const res = await request("http://localhost/v1/chat/completions", {
    method: "POST",
    dispatcher: agent,
    headers: { "content-type": "application/json" },
    body,
  });
  let ms = 0;
  let monoAt = 0;
  let text = "";
  for await (const chunk of res.body) {
    const s = chunk.toString();
    if (!ms && /"content":"[^"]/.test(s)) {
      ms = performance.now() - t0;
      monoAt = monotonicMs();
    }
    text += s;
  }
  const endMs = performance.now() - t0;
  if (!text.includes("[DONE]")) throw new Error("the direct request did not finish");
  return { ms, monoAt, endMs };
}

/** CLOCK_MONOTONIC in ms: the same clock in every process on the machine. */
export const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6;
