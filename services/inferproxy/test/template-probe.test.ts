import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { renderPrompt, startLlamaSim, tokenIds, type ChatMessage, type LlamaSim } from "@boxmaker/llama-sim";
import { LlamaClient } from "../src/upstream/llama-client.js";
import { runTemplateProbe, type ProbeIo } from "../src/template-probe/template-probe.js";
import { PROBE_TOOLS, type ProbeMessage } from "../src/template-probe/template-probe-conversations.js";
import { probeTemplate } from "../src/template-probe/template-probe-io.js";
import { refuseToolsIfUnrendered, templateWarning } from "../src/template-probe/template-verdict.js";

type Renderer = (messages: readonly ProbeMessage[], tools: readonly unknown[] | undefined) => string;

/** A probe io over a renderer written here; a renderer that throws is a template raising. */
function ioOf(render: Renderer): ProbeIo {
  return {
    render: async (b) => {
      try {
        return { ok: true, prompt: render(b.messages, b.tools) };
      } catch (err) {
        return { ok: false, error: `Jinja Exception: ${(err as Error).message}` };
      }
    },
    tokenize: async (t) => tokenIds(t),
  };
}

const chatml: Renderer = (m, t) => renderPrompt(m as unknown as ChatMessage[], t).text;
const toolsText = (t: readonly unknown[] | undefined) => (t?.length ? `[TOOLS]${JSON.stringify(t)}[/TOOLS]` : "");

/** Mistral Nemo's shape: the tools block just before the last user message. */
function beforeLastUser(block: (t: readonly unknown[] | undefined) => string): Renderer {
  return (m, t) => {
    const last = m.map((x) => x.role).lastIndexOf("user");
    return m
      .map((x, i) => `${i === last ? block(t) : ""}[${x.role}]${typeof x.content === "string" ? x.content : ""}`)
      .join("");
  };
}

describe("template probe", () => {
  it("a ChatML template with tools in the system message: rendered, prefix-stable, ok", async () => {
    const r = await runTemplateProbe(ioOf(chatml), 1);
    expect(r).toMatchObject({ ran: true, verdict: "ok", toolsRendered: true, prefixStable: true, toolsMove: false });
    expect(r.predictedReuseRatio).toBe(1);
    expect(r.steps).toHaveLength(4);
    expect(r.steps.every((s) => s.reread === 0 && s.fresh > 0)).toBe(true);
    expect(r.reasoning).toBe("kept");
    expect(r.warnings).toEqual([]);
    expect(templateWarning(r)).toBe("");
  });

  it("a template that ignores tools is no_tools, and a completion with tools is refused in one line", async () => {
    const r = await runTemplateProbe(
      ioOf((m) => chatml(m, undefined)),
      1,
    );
    expect(r.verdict).toBe("no_tools");
    expect(r.summary).toContain("renders no tools");
    let err: Error | undefined;
    try {
      refuseToolsIfUnrendered(r, JSON.stringify(PROBE_TOOLS), "tiny.gguf");
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).toMatch(/^refused for tool use: the chat template of tiny\.gguf renders no tools/);
    expect(err?.message).not.toContain("\n");
    // Without tools the template is the server's to serve.
    expect(() => refuseToolsIfUnrendered(r, "", "tiny.gguf")).not.toThrow();
    expect(() => refuseToolsIfUnrendered(r, "[]", "tiny.gguf")).not.toThrow();
  });

  it("a tools block of any size before the last user message: not prefix-stable, it moves, and each user turn re-reads at least the block (100 generated blocks)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.stringMatching(/^[a-z ]{1,400}$/), async (pad) => {
        const block = (t: readonly unknown[] | undefined) => (t?.length ? `${toolsText(t)}${pad}` : "");
        const io = ioOf(beforeLastUser(block));
        const r = await runTemplateProbe(io, 1);
        expect(r.verdict).toBe("warn");
        expect(r.prefixStable).toBe(false);
        expect(r.toolsMove).toBe(true);
        expect(r.toolsPosition).toBe("before the last user message");
        const blockTokens = (await io.tokenize(block(PROBE_TOOLS))).length;
        const userSteps = r.steps.filter((s) => s.after === "user");
        for (const s of userSteps) expect(s.reread).toBeGreaterThanOrEqual(blockTokens - 1);
        // A tool result does not move the last user message: those steps reuse everything.
        for (const s of r.steps.filter((x) => x.after === "tool result")) expect(s.reread).toBe(0);
        expect(r.divergence).toContain("the tools block moves");
        expect(templateWarning(r)).toContain("not prefix-stable");
      }),
      { numRuns: 100 },
    );
  });

  it("a template that drops earlier reasoning says so; one that raises on a shape names it with the template's words", async () => {
    const dropping: Renderer = (m, t) => {
      const last = m.map((x) => x.role).lastIndexOf("user");
      return chatml(
        m.map((x, i) => (i < last && x.role === "assistant" ? { ...x, reasoning_content: undefined } : x)),
        t,
      );
    };
    expect((await runTemplateProbe(ioOf(dropping), 1)).reasoning).toBe("dropped");

    const strict: Renderer = (m, t) => {
      for (let i = 1; i < m.length; i++) {
        if (m[i]!.role === "user" && m[i - 1]!.role === "user") throw new Error("roles must alternate");
      }
      return chatml(m, t);
    };
    const r = await runTemplateProbe(ioOf(strict), 1);
    expect(r.verdict).toBe("warn");
    const rejected = r.shapes.filter((s) => !s.accepted);
    expect(rejected.map((s) => s.shape)).toEqual(["two user messages in a row (a turn cancelled before the reply)"]);
    expect(rejected[0]!.error).toBe("roles must alternate");
  });
});

describe("template probe against the simulator's /apply-template and /tokenize", () => {
  let sim: LlamaSim;
  let client: LlamaClient;
  beforeAll(async () => {
    sim = await startLlamaSim({});
    client = new LlamaClient({ url: sim.url });
  });
  afterAll(async () => {
    await client.close();
    await sim.close();
  });

  it("renders as a completion would and probes ok", async () => {
    const r = await probeTemplate(client, 5000, "abc");
    expect(r.error).toBe("");
    expect(r).toMatchObject({
      ran: true,
      verdict: "ok",
      toolsRendered: true,
      prefixStable: true,
      templateSha256: "abc",
    });
  });
});
