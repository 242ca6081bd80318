// Test-side client for the simulator: undici over the Unix socket, as
// inferproxy talks to the real server.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Agent, request } from "undici";
import { startLlamaSim, type LlamaSim, type LlamaSimOptions, type Timings } from "@boxmaker/llama-sim";

export interface Reply {
  status: number;
  contentType: string;
  text: string;
}

export interface SimClient {
  sim: LlamaSim;
  dir: string;
  agent: Agent;
  send(method: string, urlPath: string, body?: unknown): Promise<Reply>;
  /** POST a chat completion and hand each SSE payload to onEvent as it arrives. */
  stream(
    body: unknown,
    onEvent?: (payload: string, index: number) => void | Promise<void>,
    signal?: AbortSignal,
  ): Promise<Reply & { events: string[] }>;
  close(): Promise<void>;
}

export async function startClient(opts: Omit<LlamaSimOptions, "socketPath" | "port"> = {}): Promise<SimClient> {
  const dir = mkdtempSync(path.join(tmpdir(), "llama-sim-"));
  const socketPath = path.join(dir, "llama.sock");
  const sim = await startLlamaSim({ socketPath, ...opts });
  const agent = new Agent({ connect: { socketPath } });
  const send = async (method: string, urlPath: string, body?: unknown): Promise<Reply> => {
    const hasBody = body !== undefined && body !== null;
    const res = await request(`http://localhost${urlPath}`, {
      method: method as "GET",
      dispatcher: agent,
      ...(hasBody
        ? {
            body: typeof body === "string" ? body : JSON.stringify(body),
            headers: { "content-type": "application/json" },
          }
        : {}),
    });
    return {
      status: res.statusCode,
      contentType: String(res.headers["content-type"] ?? ""),
      text: await res.body.text(),
    };
  };
  const stream: SimClient["stream"] = async (body, onEvent, signal) => {
    const res = await request("http://localhost/v1/chat/completions", {
      method: "POST",
      dispatcher: agent,
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
      ...(signal ? { signal } : {}),
    });
    const contentType = String(res.headers["content-type"] ?? "");
    let text = "";
    const events: string[] = [];
    let buf = "";
    for await (const part of res.body) {
      const s = (part as Buffer).toString("utf8");
      text += s;
      buf += s;
      for (let cut = buf.indexOf("\n\n"); cut >= 0; cut = buf.indexOf("\n\n")) {
        const ev = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        if (ev.startsWith("data: ")) {
          const payload = ev.slice(6);
          events.push(payload);
          await onEvent?.(payload, events.length - 1);
        }
      }
    }
    return { status: res.statusCode, contentType, text, events };
  };
  return {
    sim,
    dir,
    agent,
    send,
    stream,
    close: async () => {
      await agent.close();
      await sim.close();
    },
  };
}

/** SSE payloads of a verbatim body. */
export function sseEvents(body: string): string[] {
  return body
    .split("\n\n")
    .filter((e) => e.length > 0)
    .map((e) => {
      if (!e.startsWith("data: ")) throw new Error(`not an SSE data event: ${e.slice(0, 40)}`);
      return e.slice(6);
    });
}

export function timingsOf(events: string[]): Timings | undefined {
  for (const e of events) {
    if (e === "[DONE]") continue;
    const o = JSON.parse(e) as { timings?: Timings };
    if (o.timings) return o.timings;
  }
  return undefined;
}

export function contentOf(events: string[], key: "content" | "reasoning_content" = "content"): string {
  let out = "";
  for (const e of events) {
    if (e === "[DONE]") continue;
    const o = JSON.parse(e) as { prompt_progress?: unknown; choices?: Array<{ delta?: Record<string, unknown> }> };
    if (o.prompt_progress) continue;
    const v = o.choices?.[0]?.delta?.[key];
    if (typeof v === "string") out += v;
  }
  return out;
}
