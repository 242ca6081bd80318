import { systemMessageJson } from "../sessions/messages.js";

/**
 * The text of folds: what compaction puts into a new epoch's system message
 * in place of the turns it summarised. Pure text in, text out, so the format
 * can be tested (and read back from any epoch) without a model.
 */

export const FOLD_HEADING = "## Summary of the earlier conversation";

const FOLD_HEADER = /^\[Boxmaker fold \d+:/gm;

/** The system message of a compacted epoch: the prompt, then the folds under their heading. */
export function compactedSystemJson(systemPrompt: string, folds: string): string {
  return systemMessageJson(`${systemPrompt}\n\n${FOLD_HEADING}\n${folds}`);
}

/** The folds an epoch's system message carries (everything after the heading), verbatim; "" when none. */
export function foldsOf(systemJson: string): string {
  const content = (JSON.parse(systemJson) as { content?: unknown }).content;
  if (typeof content !== "string") return "";
  const i = content.indexOf(`\n${FOLD_HEADING}\n`);
  return i < 0 ? "" : content.slice(i + FOLD_HEADING.length + 2);
}

/** How many folds a text holds. */
export const foldCount = (folds: string) => (folds.match(FOLD_HEADER) ?? []).length;

/**
 * One fold: the summary of some turns in a marked block, with the blobs those
 * turns referenced listed again so their pointers outlive the turns.
 */
export function foldBlock(
  n: number,
  epoch: number,
  messages: number,
  summary: string,
  blobs: readonly string[],
): string {
  const lines = [`[Boxmaker fold ${n}: ${messages} messages of epoch ${epoch}]`, summary.trim()];
  if (blobs.length) lines.push(`Blobs these turns referenced (read_blob / grep_blob): ${blobs.join(" ")}`);
  lines.push(`[end of fold ${n}]`);
  return lines.join("\n");
}

/**
 * Earlier folds are carried verbatim while they take at most `maxBytes`; past
 * that, the oldest folds keep only their header and blob list (their turns
 * stay in the session log), so the carried text never crowds out the context.
 */
export function boundFolds(folds: string, maxBytes: number): string {
  if (!folds || !maxBytes || Buffer.byteLength(folds) <= maxBytes) return folds;
  const blocks = folds.split(/\n\n(?=\[Boxmaker fold \d+:)/);
  for (let i = 0; i < blocks.length - 1 && Buffer.byteLength(blocks.join("\n\n")) > maxBytes; i++) {
    const lines = blocks[i]!.split("\n");
    if (lines.length <= 2) continue;
    const kept = [lines[0]!, "(summary dropped to make room; these turns are in the session log)"];
    const blobs = lines.find((l) => l.startsWith("Blobs these turns referenced"));
    if (blobs) kept.push(blobs);
    kept.push(lines.at(-1)!);
    blocks[i] = kept.join("\n");
  }
  return blocks.join("\n\n");
}
