import { ToolDecision, type HistoryMessage } from "@boxmaker/common/client";
import { contentText, parseStored, type StoredMessage } from "./stored-message.js";
import type { Style } from "./style.js";
import { callLine, resultLines } from "./frame.js";
import { MarkdownBlocks } from "./markdown/blocks.js";

export interface HistoryOptions {
  style: Style;
  reasoning: boolean;
  /** Lines of each tool result shown. */
  resultLines: number;
  /** The terminal's columns: frames are cut to them. Undefined when piped. */
  width?: number;
  /** Answers rendered as Markdown (a terminal with colour), as `run` and `chat` show them. */
  markdown?: boolean;
}

/** An answer as a person reads it: Markdown fitted inside the indent, or the model's text as it is. */
function answerLines(body: string, o: HistoryOptions, width: number | undefined): string {
  if (!o.markdown) return indent(body);
  const md = new MarkdownBlocks(o.style, width);
  return [...body.split("\n").flatMap((l) => md.line(l)), ...md.end()].map((l) => (l ? `  ${l}` : l)).join("\n");
}

const clock = (ms: bigint) => (ms ? new Date(Number(ms)).toTimeString().slice(0, 5) : "");

/**
 * A session's history as a person reads it: who said what, reasoning dimmed,
 * and each tool call framed together with the result that answered it.
 */
export function renderHistory(messages: readonly HistoryMessage[], o: HistoryOptions): string {
  const s = o.style;
  const parsed = messages.map(parseStored);
  const results = new Map<string, { msg: StoredMessage; h: HistoryMessage }>();
  parsed.forEach((m, i) => {
    if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, { msg: m, h: messages[i]! });
  });
  const shown = new Set<string>();
  const out: string[] = [];
  // Frames sit two columns in.
  const inner = o.width === undefined ? undefined : o.width - 2;
  let epoch = messages[0]?.epoch ?? 0;

  parsed.forEach((m, i) => {
    const h = messages[i]!;
    if (h.epoch !== epoch) {
      epoch = h.epoch;
      out.push(s.dim(`── context compacted: epoch ${epoch} ──`));
    }
    const at = s.dim(clock(h.atUnixMs));
    switch (m.role) {
      case "user":
        out.push(`${s.bold(s.green("you"))} ${at}`, indent(contentText(m.content)));
        break;
      case "assistant": {
        // Cut off by a cancel: kept as far as it got (the model sees it so too).
        out.push(`${s.bold(s.magenta("assistant"))} ${at}${h.interrupted ? ` ${s.yellow("(interrupted)")}` : ""}`);
        const reasoning = m.reasoning_content?.trim();
        if (reasoning) {
          out.push(o.reasoning ? s.dim(indent(reasoning)) : s.dim(`  (thought for ${reasoning.length} characters)`));
        }
        const body = contentText(m.content).trim();
        if (body) out.push(answerLines(body, o, inner));
        for (const call of m.tool_calls ?? []) {
          out.push(`  ${callLine(call.function.name, call.function.arguments, s, inner)}`);
          const r = results.get(call.id);
          if (r) {
            shown.add(call.id);
            const d = decisionLine(s, r.h);
            if (d) out.push(d);
          }
          out.push(
            ...resultFrame(s, r ? contentText(r.msg.content) : undefined, r?.h.isError ?? false, o.resultLines, inner),
          );
        }
        break;
      }
      case "tool":
        // Normally drawn inside its call's frame; a result whose call is missing still shows.
        if (!m.tool_call_id || !shown.has(m.tool_call_id)) {
          out.push(
            `${s.bold(s.cyan("tool"))} ${at}`,
            ...resultFrame(s, contentText(m.content), h.isError, o.resultLines, inner),
          );
        }
        break;
      default:
        out.push(`${s.bold(m.role)} ${at}`, indent(contentText(m.content)));
    }
  });
  return out.length ? `${out.join("\n")}\n` : "";
}

const DECISION_TEXT: Record<number, string> = {
  [ToolDecision.ALLOWED]: "allowed",
  [ToolDecision.DENIED]: "denied",
  [ToolDecision.STAGED]: "staged for approval",
};

/** The decision as the live view showed it: allowed, denied or staged, with the rule and proposal. */
function decisionLine(s: Style, h: HistoryMessage): string | undefined {
  const d = DECISION_TEXT[h.decision];
  if (!d) return h.rule ? `  ${s.cyan("│ ")}${s.yellow(h.rule)}` : undefined;
  const color = h.decision === ToolDecision.ALLOWED ? s.green : h.decision === ToolDecision.DENIED ? s.red : s.yellow;
  const proposal = h.proposalId ? ` — proposal ${h.proposalId}${h.proposalState ? `: ${h.proposalState}` : ""}` : "";
  return `  ${s.cyan("│ ")}${color(`${d}${h.rule ? ` (${h.rule})` : ""}${proposal}`)}`;
}

function resultFrame(
  s: Style,
  content: string | undefined,
  isError: boolean,
  max: number,
  width: number | undefined,
): string[] {
  if (content === undefined) return [`  ${s.cyan("└ ")}${s.yellow("no result recorded")}`];
  const lines = content.replace(/\n+$/, "").split("\n");
  const shown = resultLines(content, max, s, width).map((l) => `  ${l}`);
  const more = lines.length > max ? ` (+${lines.length - max} lines)` : "";
  return [...shown, `  ${s.cyan("└ ")}${isError ? s.red(`error${more}`) : s.dim(more ? more.trim() : "ok")}`];
}

const indent = (t: string) =>
  t
    .replace(/\n+$/, "")
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
