/**
 * The template probe: what the server's chat template does with the
 * conversations Boxmaker sends, learnt from the server itself. Probe
 * conversations are rendered by llama-server (`POST /apply-template`, the same
 * code path as a completion's prompt) and counted by its tokenizer; nothing
 * here renders a template. The verdicts decide what inferproxy does
 * (template-verdict.ts): a template that renders no tools is refused for tool
 * use, one that is not prefix-stable comes up with a warning of its cost.
 *
 * This module is pure but for the two calls it is given (`ProbeIo`), so the
 * analysis is tested on any rendering a test can write.
 */

import {
  PROBE_TOOLS,
  REQUEST_ENDS,
  probeConversation,
  shapeConversations,
  type ProbeMessage,
} from "./template-probe-conversations.js";
import { judge, probeNotRun, type ProbeStep, type TemplateProbeResult } from "./template-probe-result.js";

export {
  noCorrection,
  probeNotRun,
  type TemplateCorrection,
  type TemplateProbeResult,
} from "./template-probe-result.js";

/** What the probe needs of the server. */
export interface ProbeIo {
  /** The prompt the server would send the model for this body, or the server's error. */
  render(body: { messages: readonly ProbeMessage[]; tools?: readonly unknown[] }): Promise<RenderResult>;
  tokenize(text: string): Promise<number[]>;
}

type RenderResult = { ok: true; prompt: string } | { ok: false; error: string };

/** Length of the common prefix of two sequences (strings or token arrays). */
function commonPrefix(a: ArrayLike<unknown>, b: ArrayLike<unknown>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Where char `at` of `prompt` lies, by message: one past the last message
 * (in conversation order) whose marker is rendered before it. Not the count of
 * markers before it: a template may render a message out of order (Mistral
 * Nemo puts the system message inside the last user message).
 */
function messagesBefore(prompt: string, messages: readonly ProbeMessage[], at: number): number {
  let k = 0;
  for (let i = 0; i < messages.length; i++) {
    const m = markerOf(messages[i]!);
    if (!m) continue;
    const p = prompt.indexOf(m);
    if (p >= 0 && p < at) k = i + 1;
  }
  return k;
}

function markerOf(m: ProbeMessage): string {
  const c = typeof m.content === "string" ? m.content : "";
  const w = /Marker (\w+)/.exec(c);
  return w ? w[0] : "";
}

/** Words for "before message k" of a conversation. */
function describePosition(messages: readonly ProbeMessage[], k: number): string {
  if (k === 0) return "at the start of the prompt, before the system message";
  if (k >= messages.length) return "after the last message";
  if (messages[k - 1]?.role === "system") return "after the system message";
  const lastUser = messages.map((m) => m.role).lastIndexOf("user");
  if (k === lastUser) return "before the last user message";
  return `before message ${k + 1} (${messages[k]!.role})`;
}

/** Token-level comparison of consecutive requests' prompts. */
function compareSteps(prompts: ReadonlyArray<{ after: string; tokens: readonly number[] }>): ProbeStep[] {
  const steps: ProbeStep[] = [];
  for (let i = 1; i < prompts.length; i++) {
    const prev = prompts[i - 1]!.tokens;
    const cur = prompts[i]!.tokens;
    const reused = commonPrefix(prev, cur);
    steps.push({
      after: prompts[i]!.after,
      promptTokens: cur.length,
      reused,
      reread: prev.length - reused,
      fresh: Math.max(0, cur.length - prev.length),
    });
  }
  return steps;
}

/** Σprompt_n over Σ new tokens the steps imply (a request reads what it re-reads plus what is new). */
function reuseRatio(steps: readonly ProbeStep[]): number {
  const fresh = steps.reduce((n, s) => n + s.fresh, 0);
  const read = steps.reduce((n, s) => n + s.fresh + s.reread, 0);
  return fresh > 0 ? read / fresh : 1;
}

const afterOf = (m: ProbeMessage) => (m.role === "tool" ? "tool result" : m.role);
const cut = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s);

/** Runs the whole probe through `io`. Throws only when the server cannot render anything at all. */
export async function runTemplateProbe(io: ProbeIo, nowMs: number, templateSha256 = ""): Promise<TemplateProbeResult> {
  const r = probeNotRun();
  r.ran = true;
  r.probedAtUnixMs = nowMs;
  r.templateSha256 = templateSha256;

  // Where the tools go: the first request with and without them.
  const conv = probeConversation(false);
  const first = conv.slice(0, 2);
  const withTools = await io.render({ messages: first, tools: PROBE_TOOLS });
  const without = await io.render({ messages: first });
  let toolsAtFirst = -1;
  if (!without.ok)
    throw new ProbeError(`the template does not render a system and a user message: ${cut(without.error)}`);
  if (!withTools.ok) {
    r.toolsRendered = false;
    r.shapes.push({ shape: "a tools array", accepted: false, error: templateError(withTools.error) });
  } else if (withTools.prompt !== without.prompt) {
    r.toolsRendered = true;
    const at = commonPrefix(withTools.prompt, without.prompt);
    const k = messagesBefore(withTools.prompt, first, at);
    toolsAtFirst = k;
    r.toolsPosition = describePosition(first, k);
    r.toolsTokens = (await io.tokenize(withTools.prompt)).length - (await io.tokenize(without.prompt)).length;
  }

  // Prefix stability as the loop grows the conversation.
  const main = await renderRequests(io, conv);
  if (!main.ok) {
    r.shapes.push({
      shape: `the probe conversation (up to its ${main.failedAfter})`,
      accepted: false,
      error: cut(main.error),
    });
  } else {
    r.steps = main.steps;
    r.prefixStable = main.steps.every((s) => s.reread <= BOUNDARY_REREAD);
    r.predictedReuseRatio = reuseRatio(main.steps);
    r.rereadTokensPerTurn = Math.max(0, ...main.steps.map((s) => s.reread));
    if (r.toolsRendered) {
      // The same position rule at the end of the conversation: a block tied to the last user message moves.
      const last = await io.render({ messages: conv, tools: PROBE_TOOLS });
      const lastWithout = await io.render({ messages: conv });
      if (last.ok && lastWithout.ok) {
        const k = messagesBefore(last.prompt, conv, commonPrefix(last.prompt, lastWithout.prompt));
        const lastUser = conv.map((m) => m.role).lastIndexOf("user");
        if (k === lastUser && k !== toolsAtFirst) {
          r.toolsMove = true;
          r.toolsPosition = "before the last user message";
        }
      }
    }
    if (!r.prefixStable) r.divergence = describeDivergence(main, conv, r.toolsMove);
  }

  // Reasoning: kept, dropped once the conversation goes on, or never rendered.
  const think = probeConversation(true);
  const within = await io.render({ messages: think.slice(0, 4), tools: PROBE_TOOLS });
  const later = await io.render({ messages: think.slice(0, 6), tools: PROBE_TOOLS });
  if (within.ok && later.ok) {
    const inWithin = within.prompt.includes("Marker thinka");
    const inLater = later.prompt.includes("Marker thinka");
    r.reasoning = inLater ? "kept" : inWithin ? "dropped" : "not_rendered";
    const reasoned = await renderRequests(io, think);
    if (r.reasoning === "kept") {
      // What not sending reasoning_content back would cost: the last request with and without it.
      const stripped = think.map(({ reasoning_content: _, ...m }) => m as ProbeMessage);
      const a = await io.render({ messages: think, tools: PROBE_TOOLS });
      const b = await io.render({ messages: stripped, tools: PROBE_TOOLS });
      if (a.ok && b.ok) {
        const ta = await io.tokenize(a.prompt);
        r.reasoningRereadTokens = ta.length - commonPrefix(ta, await io.tokenize(b.prompt));
      }
    } else if (reasoned.ok) {
      r.reasoningRereadTokens = Math.max(0, ...reasoned.steps.map((s) => s.reread));
    }
  }

  for (const { shape, messages } of shapeConversations()) {
    const out = await io.render({ messages, tools: PROBE_TOOLS });
    r.shapes.push({ shape, accepted: out.ok, error: out.ok ? "" : templateError(out.error) });
  }

  judge(r);
  return r;
}

/**
 * Tokens a request may re-read where the last prompt ended and the reply
 * begins: a tokenizer can join the generation prompt's last token with the
 * reply's first one differently (the server then re-reads that one token).
 * A cost of a token per request, not a moving block.
 */
const BOUNDARY_REREAD = 2;

export class ProbeError extends Error {}

type Rendered = { ok: true; steps: ProbeStep[]; prompts: string[] } | { ok: false; error: string; failedAfter: string };

async function renderRequests(io: ProbeIo, conv: readonly ProbeMessage[]): Promise<Rendered> {
  const prompts: Array<{ after: string; tokens: number[] }> = [];
  const texts: string[] = [];
  for (const end of REQUEST_ENDS) {
    const out = await io.render({ messages: conv.slice(0, end + 1), tools: PROBE_TOOLS });
    if (!out.ok) return { ok: false, error: out.error, failedAfter: afterOf(conv[end]!) };
    texts.push(out.prompt);
    prompts.push({ after: afterOf(conv[end]!), tokens: await io.tokenize(out.prompt) });
  }
  return { ok: true, steps: compareSteps(prompts), prompts: texts };
}

/** The tools block's text in a rendering (every template quotes the description). */
const TOOLS_TEXT = "Read a text file in the workspace";

function describeDivergence(
  main: Extract<Rendered, { ok: true }>,
  conv: readonly ProbeMessage[],
  toolsMove: boolean,
): string {
  const i = main.steps.findIndex((s) => s.reread > BOUNDARY_REREAD);
  const prev = main.prompts[i]!;
  const cur = main.prompts[i + 1]!;
  const sent = conv.slice(0, REQUEST_ENDS[i]! + 1);
  const at = commonPrefix(prev, cur);
  const head = `request ${i + 2} (after a ${main.steps[i]!.after}) does not start with request ${i + 1}'s prompt`;
  // The message the divergence is in, and the first marked message after it.
  const k = messagesBefore(prev, sent, at);
  let next = Number.POSITIVE_INFINITY;
  for (let j = k; j < sent.length; j++) {
    const p = markerOf(sent[j]!) ? prev.indexOf(markerOf(sent[j]!), at) : -1;
    if (p >= 0) {
      next = p;
      break;
    }
  }
  // A movable block that starts between the divergence and that message is what moved.
  const tools = prev.indexOf(TOOLS_TEXT, at);
  const system = prev.indexOf(markerOf(sent[0]!), at);
  let what: string;
  if (tools >= 0 && tools <= next && (system < 0 || tools <= system)) {
    what = toolsMove
      ? "the tools block moves: it is rendered before the last user message, so each new user message moves it"
      : "the tools block is rendered differently";
  } else if (system >= 0 && system <= next) {
    what = "the system message moves: it is rendered with the last user message";
  } else if (k >= sent.length) {
    what = "the reply is not rendered the way the generation prompt begins it";
  } else {
    const m = sent[k]!;
    const kind = m.role === "assistant" && Array.isArray(m.tool_calls) ? "assistant, a tool call" : afterOf(m);
    what = `message ${k + 1} (${kind}) is rendered differently once a ${main.steps[i]!.after} follows`;
  }
  return `${head}: ${what}`;
}

/** The part of a server's template error that says what is wrong (llama-server wraps it in parser noise). */
function templateError(message: string): string {
  const m = /(?:Jinja Exception|Error): ([^\n]+)\s*$/.exec(message);
  return cut((m?.[1] ?? message).trim());
}
