import { messageOf } from "@boxmaker/common";
import type { LlamaClient } from "../upstream/llama-client.js";
import type { Props } from "../server-check/self-test.js";
import {
  ProbeError,
  noCorrection,
  probeNotRun,
  runTemplateProbe,
  type ProbeIo,
  type TemplateCorrection,
  type TemplateProbeResult,
} from "./template-probe.js";

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
 * corrected one (only then: the Jinja renderer and the correction are loaded
 * for such a template alone, not by every inferproxy), trusting its own Jinja
 * only when it agreed with the server on every render of a second probe run.
 */
export async function probeTemplate(
  client: LlamaClient,
  timeoutMs: number,
  templateSha256: string,
  props?: Props,
): Promise<TemplateProbeResult> {
  try {
    const server = llamaProbeIo(client, timeoutMs);
    const r = await runTemplateProbe(server, Date.now(), templateSha256);
    const source = props?.chat_template;
    if (typeof source === "string" && r.ran && r.toolsRendered && r.steps.length > 0 && !r.prefixStable) {
      r.correction = await findCorrection(server, source, props, r);
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

/** The probe run again with each render also made here, and a correction judged if this renderer agreed on all. */
async function findCorrection(
  server: ProbeIo,
  source: string,
  props: Props | undefined,
  original: TemplateProbeResult,
): Promise<TemplateCorrection> {
  const [{ localRender, shadowedIo }, { correctTemplate }] = await Promise.all([
    import("./template-local-render.js"),
    import("./template-correction.js"),
  ]);
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
  await runTemplateProbe(shadow.io, Date.now());
  const { renders, agreed } = shadow.agreement;
  const best = agreed.indexOf(renders);
  if (best >= 0) return correctTemplate(source, variants[best]!, server.tokenize, original, renders, Date.now());
  const c = noCorrection();
  c.state = "unavailable";
  c.agreeingRenders = Math.max(...agreed);
  c.reason =
    `inferproxy's Jinja renders this template differently from llama-server (${c.agreeingRenders} of ${renders} probe renders agreed), ` +
    "so a corrected template could not be judged here";
  return c;
}
