import { messageOf } from "@boxmaker/common";
import type { LlamaClient } from "./llama-client.js";
import { ProbeError, probeNotRun, runTemplateProbe, type ProbeIo, type TemplateProbeResult } from "./template-probe.js";

function errorText(json: unknown, text: string): string {
  const e = (json as { error?: { message?: unknown } } | undefined)?.error?.message;
  return typeof e === "string" ? e : text.slice(0, 500);
}

/** The probe's two calls, as llama-server answers them (`POST /apply-template` → `{prompt}`, `POST /tokenize` → `{tokens}`). */
function llamaProbeIo(client: LlamaClient, timeoutMs: number): ProbeIo {
  return {
    async render(body) {
      const res = await client.json({ method: "POST", path: "/apply-template", body: JSON.stringify(body), timeoutMs });
      if (res.status === 404) throw new ProbeError("llama-server has no POST /apply-template (too old a build)");
      const prompt = (res.json as { prompt?: unknown } | undefined)?.prompt;
      if (res.status === 200 && typeof prompt === "string") return { ok: true, prompt };
      // A template that raises on a message shape answers 400 (or 500) with the exception's text.
      if (res.status === 400 || res.status === 500) return { ok: false, error: errorText(res.json, res.text) };
      throw new ProbeError(`POST /apply-template answered HTTP ${res.status}: ${res.text.slice(0, 200)}`);
    },
    async tokenize(text) {
      const res = await client.json({
        method: "POST",
        path: "/tokenize",
        body: JSON.stringify({ content: text }),
        timeoutMs,
      });
      const tokens = (res.json as { tokens?: unknown } | undefined)?.tokens;
      if (res.status !== 200 || !Array.isArray(tokens) || !tokens.every((t) => typeof t === "number")) {
        throw new ProbeError(`POST /tokenize answered HTTP ${res.status}: ${res.text.slice(0, 200)}`);
      }
      return tokens as number[];
    },
  };
}

/** Runs the probe against the server; a probe that cannot run says why instead of throwing. */
export async function probeTemplate(
  client: LlamaClient,
  timeoutMs: number,
  templateSha256: string,
): Promise<TemplateProbeResult> {
  try {
    return await runTemplateProbe(llamaProbeIo(client, timeoutMs), Date.now(), templateSha256);
  } catch (err) {
    const r = probeNotRun(messageOf(err));
    r.templateSha256 = templateSha256;
    return r;
  }
}
