// An MCP server's question for the person (elicitation) as the terminal shows it: who asks,
// during which call, the server's words (untrusted: made visible, wrapped), and for a page the
// whole URL with its host spelled out, never cut: what a person opens must be what they read.
import { ElicitationMode, type Elicitation } from "@boxmaker/common/client";
import type { FormField } from "@boxmaker/common/lite";
import { foldLine, wrapWords } from "./columns.js";
import type { Style } from "./style.js";

/** The frame before the question: its head, the server's message and, for a page, the page. */
export function questionFrame(q: Elicitation, s: Style, width: number | undefined): string {
  const bar = s.cyan("│ ");
  const inner = width === undefined ? undefined : Math.max(10, width - 2);
  const head =
    q.mode === ElicitationMode.URL
      ? `MCP server "${q.server}" asks you to open a page · during ${q.tool}`
      : `MCP server "${q.server}" asks you · during ${q.tool}`;
  const lines = wrapWords(head, width === undefined ? undefined : width - 2).map((l, i) =>
    i === 0 ? s.cyan(`┌ ${s.bold(l)}`) : bar + s.bold(l),
  );
  for (const para of (q.message || "(no message)").split(/\r?\n/)) {
    for (const l of wrapWords(para, inner)) lines.push(bar + l);
  }
  if (q.mode === ElicitationMode.URL) {
    const page = pageOf(q.url);
    lines.push(bar);
    for (const row of foldLine(page.href, inner)) lines.push(bar + s.bold(row));
    lines.push(bar + s.dim(`host: ${page.host}`));
  }
  const foot =
    q.mode === ElicitationMode.URL
      ? "Boxmaker does not open it: open it yourself if you trust that host. Your answer goes to the server, not to the model."
      : "Your answers go to the server, not to the model. Do not give passwords or keys here.";
  for (const l of wrapWords(foot, inner)) lines.push(bar + s.dim(l));
  lines.push(s.cyan("└"));
  return `${lines.join("\n")}\n`;
}

/** The page as the browser will read it: normalised, its host in ASCII (an IDN as xn--, so a look-alike shows). */
export function pageOf(url: string): { href: string; host: string } {
  try {
    const u = new URL(url);
    return { href: u.href, host: u.host };
  } catch {
    return { href: url, host: "(not a URL)" };
  }
}

/** What a field asks, above its input line: label, description, the choices numbered, the default. */
export function fieldLines(f: FormField, s: Style, width: number | undefined): string[] {
  const need = f.required ? " (required)" : " (optional, Enter skips)";
  const out = wrapWords(`${f.label}${need}`, width, "  ", "    ").map(s.bold);
  if (f.description) out.push(...wrapWords(f.description, width, "    ").map(s.dim));
  if (f.kind === "choice" || f.kind === "choices") {
    f.options.forEach((o, i) => {
      out.push(
        ...wrapWords(`${i + 1}. ${o.label}${o.label === o.value ? "" : ` (${o.value})`}`, width, "    ", "       "),
      );
    });
  }
  const hint = inputHint(f);
  if (hint) out.push(...wrapWords(hint, width, "    ").map(s.dim));
  return out;
}

function inputHint(f: FormField): string {
  const def =
    f.default === undefined ? "" : `Enter takes ${Array.isArray(f.default) ? f.default.join(", ") : String(f.default)}`;
  const parts: string[] = [];
  switch (f.kind) {
    case "text":
      if (f.format) parts.push(f.format);
      if (f.minLength !== undefined || f.maxLength !== undefined)
        parts.push(`${f.minLength ?? 0}–${f.maxLength ?? "∞"} characters`);
      break;
    case "number":
      parts.push(f.integer ? "a whole number" : "a number");
      if (f.minimum !== undefined || f.maximum !== undefined) parts.push(`${f.minimum ?? "−∞"} to ${f.maximum ?? "∞"}`);
      break;
    case "boolean":
      parts.push("y or n");
      break;
    case "choice":
      parts.push("its number");
      break;
    case "choices":
      parts.push("their numbers, separated by commas");
      if (f.minItems !== undefined || f.maxItems !== undefined)
        parts.push(`${f.minItems ?? 0} to ${f.maxItems ?? "all"}`);
      break;
  }
  if (def) parts.push(def);
  return parts.join(" · ");
}

/** The answers as they will be sent, one per line, before the last question. */
export function answerLines(
  fields: FormField[],
  content: Record<string, unknown>,
  s: Style,
  width: number | undefined,
): string[] {
  const out: string[] = [];
  for (const f of fields) {
    if (!(f.key in content)) continue;
    const v = content[f.key];
    const shown = Array.isArray(v) ? v.join(", ") : typeof v === "boolean" ? (v ? "yes" : "no") : String(v);
    out.push(...wrapWords(`${f.label}: ${shown}`, width, "  ", "    "));
  }
  return out.length ? out : [s.dim("  (nothing filled in)")];
}
