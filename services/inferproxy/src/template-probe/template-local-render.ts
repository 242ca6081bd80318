import { Template } from "@huggingface/jinja";
import type { ProbeMessage } from "./template-probe-conversations.js";
import type { ProbeIo } from "./template-probe.js";

/** What a template sees besides the conversation, as llama-server fills it in (`GET /props`). */
export interface TemplateContext {
  bosToken: string;
  eosToken: string;
  /**
   * llama-server hands a template tool-call arguments as a JSON object when
   * the template prints them as one (chat_template_caps); as the string the
   * model wrote otherwise. Both are tried and the one that agrees is kept.
   */
  objectArguments: boolean;
}

type Render = ProbeIo["render"];

function withArguments(messages: readonly ProbeMessage[], asObjects: boolean): ProbeMessage[] {
  if (!asObjects) return messages.map((m) => m);
  return messages.map((m) => {
    if (!Array.isArray(m.tool_calls)) return m;
    const calls = (m.tool_calls as Array<{ function: { name: string; arguments: string } }>).map((c) => {
      let args: unknown = c.function.arguments;
      try {
        args = JSON.parse(c.function.arguments);
      } catch {
        // A call with broken arguments is rendered as its text, as the server does.
      }
      return { ...c, function: { ...c.function, arguments: args } };
    });
    return { ...m, tool_calls: calls };
  });
}

/**
 * The tools as llama-server hands them to a template: it parses each into
 * name, description and parameters and writes them back in that order.
 */
function asServerTools(tools: readonly unknown[]): unknown[] {
  return tools.map((t) => {
    const f = (t as { function?: Record<string, unknown> }).function ?? {};
    return { type: "function", function: { name: f.name, description: f.description, parameters: f.parameters } };
  });
}

/**
 * Renders a template here, with a Jinja implementation written for chat
 * templates (@huggingface/jinja), for templates the server has not loaded:
 * a corrected one is judged by the same probe before the operator restarts
 * llama-server with it. Whether this agrees with the server is itself measured
 * (shadowed below) on the template the server has loaded; a disagreement
 * means nothing rendered here is trusted.
 */
export function localRender(source: string, ctx: TemplateContext): Render {
  let template: Template | undefined;
  let parseError = "";
  try {
    template = new Template(source);
  } catch (err) {
    parseError = err instanceof Error ? err.message : String(err);
  }
  return async (body) => {
    if (!template) return { ok: false, error: `the template does not parse: ${parseError}` };
    try {
      const prompt = template.render({
        messages: withArguments(body.messages, ctx.objectArguments),
        ...(body.tools ? { tools: asServerTools(body.tools) } : {}),
        bos_token: ctx.bosToken,
        eos_token: ctx.eosToken,
        add_generation_prompt: true,
      });
      return { ok: true, prompt };
    } catch (err) {
      return { ok: false, error: err instanceof Error ? err.message : String(err) };
    }
  };
}

/** How far local renderings agreed with the server's, over every render the probe made. */
export interface Agreement {
  renders: number;
  /** Per local variant: renders that agreed (the same prompt, or both refused). */
  agreed: number[];
}

/**
 * The server's `io`, with every render also made by each local variant and
 * compared. The probe's answers are the server's; the comparison costs no
 * extra request.
 */
export function shadowedIo(server: ProbeIo, variants: readonly Render[]): { io: ProbeIo; agreement: Agreement } {
  const agreement: Agreement = { renders: 0, agreed: variants.map(() => 0) };
  const io: ProbeIo = {
    tokenize: (text) => server.tokenize(text),
    async render(body) {
      const got = await server.render(body);
      agreement.renders++;
      for (let i = 0; i < variants.length; i++) {
        const mine = await variants[i]!(body);
        const same = got.ok ? mine.ok && mine.prompt === got.prompt : !mine.ok;
        if (same) agreement.agreed[i]!++;
      }
      return got;
    },
  };
  return { io, agreement };
}
