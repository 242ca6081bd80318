import type { Proposal } from "@boxmaker/common/client";
import type { Style } from "./style.js";

/** What a person must see before deciding: the tool, where it came from, and the exact diff or command. */
export function renderProposal(p: Proposal, s: Style): string {
  const head = [
    `${s.bold(`proposal ${p.id}`)} ${stateText(p.state, s)}`,
    s.dim(`${p.tool} · session ${p.sessionId} · rule ${p.rule || "-"}`),
    "",
  ];
  const body = (p.preview || p.argumentsJson)
    .replace(/\n+$/, "")
    .split("\n")
    .map((l) => diffLine(l, s));
  const tail = p.result ? ["", s.dim(`result: ${p.result}`)] : [];
  return `${[...head, ...body, ...tail].join("\n")}\n`;
}

function diffLine(l: string, s: Style): string {
  if (l.startsWith("+++") || l.startsWith("---")) return s.bold(l);
  if (l.startsWith("@@")) return s.cyan(l);
  if (l.startsWith("+")) return s.green(l);
  if (l.startsWith("-")) return s.red(l);
  return l;
}

export function stateText(state: string, s: Style): string {
  switch (state) {
    case "pending":
      return s.yellow("pending");
    case "applied":
      return s.green("applied");
    default:
      return s.red(state);
  }
}

/** A unified diff, coloured line by line. */
export function renderDiff(diff: string, s: Style): string {
  return diff
    .replace(/\n+$/, "")
    .split("\n")
    .map((l) => diffLine(l, s))
    .join("\n");
}
