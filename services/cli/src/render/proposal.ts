import type { Proposal } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { cut, faithfulLine, foldLine, wrapWords } from "./columns.js";

/**
 * What a person must see before deciding: the tool, where it came from, and
 * the exact diff or command. On a terminal (`width`) the head wraps at spaces
 * and a long diff line folds onto rows marked ↪ — never cut, since what ran
 * past the edge would be approved unseen.
 */
export function renderProposal(p: Proposal, s: Style, width?: number): string {
  const head = [
    `${s.bold(`proposal ${p.id}`)} ${stateText(p.state, s)}`,
    ...wrapWords(`${p.tool} · session ${p.sessionId} · rule ${p.rule || "-"}`, width, "", "  ").map(s.dim),
    "",
  ];
  const body = renderDiff(p.preview || p.argumentsJson, s, width).split("\n");
  const tail = p.result ? ["", ...wrapWords(`result: ${p.result}`, width, "", "  ").map(s.dim)] : [];
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

/** A unified diff, coloured line by line; on a terminal its headers cut to the width and its lines folded to it. */
export function renderDiff(diff: string, s: Style, width?: number): string {
  return diff
    .replace(/\n+$/, "")
    .split("\n")
    .flatMap((l) => fitDiffLine(l, width).map((row) => diffLine(row, s)))
    .join("\n");
}

function fitDiffLine(l: string, width: number | undefined): string[] {
  const shown = faithfulLine(l);
  if (width === undefined) return [shown];
  if (/^(\+\+\+|---|@@)/.test(l)) return [cut(shown, width)];
  // The patch's rule under its Index line is decoration: as wide as the terminal, not folded.
  if (/^=+$/.test(l)) return ["=".repeat(Math.min(l.length, width))];
  return foldLine(shown, width);
}
