import { messageOf } from "@boxmaker/common";
import type { LlamaClient } from "./llama-client.js";
import type { Props } from "./self-test.js";
import { correctTemplate } from "./template-correction.js";
import { localRender, shadowedIo } from "./template-local-render.js";
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

/**
 * Runs the probe against the server; a probe that cannot run says why instead
 * of throwing. For a template that is not prefix-stable it also looks for a
 * corrected one, trusting its own Jinja only when it agreed with the server on
 * every render the probe made.
 */
export async function probeTemplate(
  client: LlamaClient,
  timeoutMs: number,
  templateSha256: string,
  props?: Props,
): Promise<TemplateProbeResult> {
  try {
    const server = llamaProbeIo(client, timeoutMs);
    const source = props?.chat_template;
    if (typeof source !== "string") return await runTemplateProbe(server, Date.now(), templateSha256);
    const ctx = (objectArguments: boolean) => ({
      bosToken: props?.bos_token ?? "",
      eosToken: props?.eos_token ?? "",
      objectArguments,
    });
    const variants = [ctx(false), ctx(true)];
    const shadow = shadowedIo(
      server,
      variants.map((v) => localRender(source, v)),
    );
    const r = await runTemplateProbe(shadow.io, Date.now(), templateSha256);
    if (r.ran && r.toolsRendered && r.steps.length > 0 && !r.prefixStable) {
      const { renders, agreed } = shadow.agreement;
      const best = agreed.indexOf(renders);
      if (best < 0) {
        r.correction.state = "unavailable";
        r.correction.agreeingRenders = Math.max(...agreed);
        r.correction.reason =
          `inferproxy's Jinja renders this template differently from llama-server (${Math.max(...agreed)} of ${renders} probe renders agreed), ` +
          "so a corrected template could not be judged here";
      } else {
        r.correction = await correctTemplate(source, variants[best]!, server.tokenize, r, renders, Date.now());
      }
      if (r.correction.state === "available") {
        r.summary = r.summary.replace(
          / \(`boxmaker doctor` for the table\)$/,
          "; a corrected template is available (`boxmaker doctor --write-template FILE`, then llama-server --chat-template-file FILE)",
        );
      }
    }
    return r;
  } catch (err) {
    const r = probeNotRun(messageOf(err));
    r.templateSha256 = templateSha256;
    return r;
  }
}
