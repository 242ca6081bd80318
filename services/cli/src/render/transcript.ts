import { ToolDecision, type GetSessionResponse, type HistoryMessage } from "@boxmaker/common/client";
import { planMarkdown } from "./plan.js";
import { contentText, parseStored, type StoredMessage } from "./stored-message.js";

const iso = (ms: bigint) => (ms ? new Date(Number(ms)).toISOString().replace(/\.\d+Z$/, "Z") : "");

/** A fence longer than any backtick run inside, so no content can close it early. */
function fenced(body: string, lang = ""): string {
  const longest = Math.max(2, ...[...body.matchAll(/`+/g)].map((m) => m[0].length));
  const f = "`".repeat(longest + 1);
  return `${f}${lang}\n${body.replace(/\n+$/, "")}\n${f}`;
}

function decisionWords(h: HistoryMessage | undefined): string {
  if (!h) return "no result";
  const rule = h.rule ? ` (${h.rule})` : "";
  switch (h.decision) {
    case ToolDecision.ALLOWED:
      return `allowed${rule}`;
    case ToolDecision.DENIED:
      return `denied${rule}`;
    case ToolDecision.STAGED:
      return `staged for approval${rule} as ${h.proposalId || "a proposal"}: ${h.proposalState || "pending"}`;
    default:
      return h.rule ? h.rule : "not decided";
  }
}

function prettyArgs(args: string): string {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

/** The session as a Markdown document a person can read or attach to an issue. */
export function transcriptMarkdown(res: GetSessionResponse, o: { reasoning: boolean }): string {
  const s = res.session;
  const out: string[] = [`# ${s?.title || "Untitled session"}`, ""];
  out.push(
    `- session: \`${s?.id ?? ""}\``,
    `- created: ${iso(s?.createdUnixMs ?? 0n)}`,
    `- turns: ${s?.turns ?? 0}, messages: ${s?.messages ?? 0}`,
    "",
  );
  // The model's task list as it last set it (update_plan); each change is also in the calls below.
  if (res.plan.length) out.push("## Plan", "", ...planMarkdown(res.plan), "");
  const parsed = res.messages.map(parseStored);
  const results = new Map<string, { m: StoredMessage; h: HistoryMessage }>();
  parsed.forEach((m, i) => {
    if (m.role === "tool" && m.tool_call_id) results.set(m.tool_call_id, { m, h: res.messages[i]! });
  });
  let epoch = res.messages[0]?.epoch ?? 0;
  parsed.forEach((m, i) => {
    const h = res.messages[i]!;
    if (h.epoch !== epoch) {
      epoch = h.epoch;
      out.push(`---`, "", `*context compacted: epoch ${epoch}*`, "");
    }
    if (m.role === "user") {
      out.push(`## You · ${iso(h.atUnixMs)}`, "", contentText(m.content), "");
    } else if (m.role === "assistant") {
      out.push(`## Assistant · ${iso(h.atUnixMs)}`, "");
      if (o.reasoning && m.reasoning_content)
        out.push("<details><summary>reasoning</summary>", "", fenced(m.reasoning_content), "", "</details>", "");
      const t = contentText(m.content);
      if (t.trim()) out.push(t, "");
      for (const c of m.tool_calls ?? []) {
        const r = results.get(c.id);
        out.push(`### Tool call: \`${c.function.name}\``, "", fenced(prettyArgs(c.function.arguments), "json"), "");
        out.push(`Decision: ${decisionWords(r?.h)}${r?.h.isError ? " — result is an error" : ""}`, "");
        if (r) out.push(fenced(contentText(r.m.content), "text"), "");
      }
    } else if (m.role !== "tool") {
      out.push(`## ${m.role}`, "", contentText(m.content), "");
    }
  });
  return `${out
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}

/** One JSON object per stored message, the message parsed, the decision beside it. */
export function transcriptJsonl(res: GetSessionResponse): string {
  return res.messages
    .map((h, i) =>
      JSON.stringify({
        session_id: res.session?.id ?? "",
        index: i,
        epoch: h.epoch,
        at_unix_ms: Number(h.atUnixMs),
        message: parseStored(h),
        ...(h.decision || h.rule
          ? {
              decision: (ToolDecision[h.decision] ?? "UNSPECIFIED").toLowerCase(),
              rule: h.rule,
              is_error: h.isError,
              proposal_id: h.proposalId,
              proposal_state: h.proposalState,
            }
          : {}),
      }),
    )
    .map((l) => `${l}\n`)
    .join("");
}
