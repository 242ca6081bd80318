import fc from "fast-check";
import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tokenIds } from "@boxmaker/llama-sim";
import type { LlamaClient } from "../src/upstream/llama-client.js";
import { candidateRewrites, correctTemplate } from "../src/template-probe/template-correction.js";
import { localRender, shadowedIo, type TemplateContext } from "../src/template-probe/template-local-render.js";
import { runTemplateProbe, type ProbeIo } from "../src/template-probe/template-probe.js";
import { PROBE_TOOLS, type ProbeMessage } from "../src/template-probe/template-probe-conversations.js";
import { probeTemplate } from "../src/template-probe/template-probe-io.js";

const template = (name: string) => readFileSync(join(import.meta.dirname, "fixtures", "templates", name), "utf8");
const NEMO = template("mistralai-Mistral-Nemo-Instruct-2407.jinja");
const SMALL = template("Mistral-Small-3.2-24B-Instruct-2506.jinja");
const QWEN = template("Qwen-Qwen3-0.6B.jinja");
const CTX: TemplateContext = { bosToken: "<s>", eosToken: "</s>", objectArguments: true };
const tokenize = async (t: string) => tokenIds(t);
const ioFor = (source: string): ProbeIo => ({ render: localRender(source, CTX), tokenize });

describe("template correction", () => {
  it("Mistral Nemo: both moving blocks rewritten, and the probe finds the result prefix-stable with the tools rendered", async () => {
    const original = await runTemplateProbe(ioFor(NEMO), 1);
    expect(original).toMatchObject({ toolsRendered: true, prefixStable: false, toolsMove: true });
    expect(original.predictedReuseRatio).toBeGreaterThan(3);

    const c = await correctTemplate(NEMO, CTX, tokenize, original, 21, 1);
    expect(c.state).toBe("available");
    expect(c.rules).toEqual([
      "the tools block is rendered with the first user message, not the last",
      "the system message is rendered with the first user message, not the last",
    ]);
    expect(c.templateSha256).toBe(createHash("sha256").update(c.template).digest("hex"));
    const fixed = await runTemplateProbe(ioFor(c.template), 1);
    expect(fixed).toMatchObject({ toolsRendered: true, prefixStable: true, toolsMove: false });
    expect(fixed.predictedReuseRatio).toBeLessThan(1.05);
    expect(c.predictedReuseRatio).toBe(fixed.predictedReuseRatio);
    // The corrected template rejects no shape the original accepted.
    for (const s of fixed.shapes) {
      const before = original.shapes.find((o) => o.shape === s.shape);
      if (before?.accepted) expect(s.accepted, s.shape).toBe(true);
    }
    // Nothing left to correct in it.
    expect(candidateRewrites(c.template)).toEqual([]);
  });

  it("Mistral Small 3.2 (tools only before the last user message): one rewrite suffices", async () => {
    const original = await runTemplateProbe(ioFor(SMALL), 1);
    expect(original.prefixStable).toBe(false);
    const c = await correctTemplate(SMALL, CTX, tokenize, original, 21, 1);
    expect(c.state).toBe("available");
    expect(c.rules).toEqual(["the tools block is rendered with the first user message, not the last"]);
    expect((await runTemplateProbe(ioFor(c.template), 1)).prefixStable).toBe(true);
  });

  it("a prefix-stable template (Qwen3) has nothing to rewrite; an unknown cause is said, not guessed at", async () => {
    expect(candidateRewrites(QWEN)).toEqual([]);
    const moving = `{%- for m in messages %}{%- if loop.last and tools %}[T]{{ tools|tojson }}[/T]{%- endif %}[{{ m.role }}]{{ m.content }}{%- endfor %}`;
    const original = await runTemplateProbe(ioFor(moving), 1);
    expect(original.prefixStable).toBe(false);
    const c = await correctTemplate(moving, CTX, tokenize, original, 21, 1);
    expect(c.state).toBe("unavailable");
    expect(c.reason).toMatch(/^what moves is not a block Boxmaker knows how to move/);
  });

  it("generated conversations as the loop grows them: each request's rendering starts with the previous one's on the corrected Nemo", async () => {
    const c = await correctTemplate(NEMO, CTX, tokenize, await runTemplateProbe(ioFor(NEMO), 1), 21, 1);
    const render = localRender(c.template, CTX);
    const text = fc.string({ minLength: 1, maxLength: 40 });
    const turn = fc.record({ user: text, calls: fc.array(fc.tuple(text, text), { maxLength: 3 }), answer: text });
    await fc.assert(
      fc.asyncProperty(text, fc.array(turn, { minLength: 2, maxLength: 5 }), async (system, turns) => {
        const messages: ProbeMessage[] = [{ role: "system", content: system }];
        const prompts: string[] = [];
        let n = 0;
        for (const t of turns) {
          messages.push({ role: "user", content: t.user });
          prompts.push(((await render({ messages, tools: PROBE_TOOLS })) as { prompt: string }).prompt);
          for (const [args, result] of t.calls) {
            const id = `call${String(n++).padStart(5, "0")}`;
            messages.push({
              role: "assistant",
              content: "",
              tool_calls: [
                { id, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: args }) } },
              ],
            });
            messages.push({ role: "tool", tool_call_id: id, content: result });
            prompts.push(((await render({ messages, tools: PROBE_TOOLS })) as { prompt: string }).prompt);
          }
          messages.push({ role: "assistant", content: t.answer });
        }
        for (let i = 1; i < prompts.length; i++) expect(prompts[i]!.startsWith(prompts[i - 1]!)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it("the shadow counts a render as agreeing only when the prompt is the same (or both refuse)", async () => {
    const server = ioFor(NEMO);
    const { io, agreement } = shadowedIo(server, [
      localRender(NEMO, CTX),
      localRender(NEMO, { ...CTX, objectArguments: false }),
      localRender(NEMO.replace("[INST]", "[INST] "), CTX),
    ]);
    await runTemplateProbe(io, 1);
    expect(agreement.renders).toBeGreaterThan(15);
    expect(agreement.agreed[0]).toBe(agreement.renders);
    // String arguments render differently once a tool call is in the conversation.
    expect(agreement.agreed[1]).toBeLessThan(agreement.renders);
    expect(agreement.agreed[2]).toBeLessThan(agreement.renders);
  });
});

/** A llama-server that renders with `render` (its /props carrying `source`) and tokenizes as the simulator does. */
function fakeServer(source: string, render: ProbeIo["render"]): LlamaClient {
  return {
    async json(req: { path: string; body?: string }) {
      const body = JSON.parse(req.body ?? "{}");
      if (req.path === "/tokenize") return { status: 200, json: { tokens: tokenIds(body.content) }, text: "" };
      const out = await render(body);
      return out.ok
        ? { status: 200, json: { prompt: out.prompt }, text: "" }
        : { status: 400, json: { error: { message: out.error } }, text: out.error };
    },
    source,
  } as unknown as LlamaClient;
}

describe("probeTemplate offers a correction", () => {
  const props = { chat_template: NEMO, bos_token: "<s>", eos_token: "</s>" };

  it("when its own Jinja agrees with the server on every render", async () => {
    const r = await probeTemplate(fakeServer(NEMO, localRender(NEMO, CTX)), 1000, "sha", props);
    expect(r.verdict).toBe("warn");
    expect(r.correction.state).toBe("available");
    expect(r.correction.agreeingRenders).toBeGreaterThan(15);
    expect(r.summary).toContain("a corrected template is available (`boxmaker doctor --write-template FILE`");
  });

  it("not when the server renders the template differently: it says so and offers nothing", async () => {
    const drifted: ProbeIo["render"] = async (b) => {
      const out = await localRender(NEMO, CTX)(b);
      return out.ok ? { ok: true, prompt: out.prompt.replaceAll('", "', '","') } : out;
    };
    const r = await probeTemplate(fakeServer(NEMO, drifted), 1000, "sha", props);
    expect(r.prefixStable).toBe(false);
    expect(r.correction.state).toBe("unavailable");
    expect(r.correction.reason).toMatch(
      /renders this template differently from llama-server \(\d+ of \d+ probe renders agreed\)/,
    );
    expect(r.correction.template).toBe("");
  });

  it("and none for a stable template", async () => {
    const r = await probeTemplate(fakeServer(QWEN, localRender(QWEN, CTX)), 1000, "sha", {
      ...props,
      chat_template: QWEN,
    });
    expect(r.prefixStable).toBe(true);
    expect(r.correction.state).toBe("");
  });
});
