// The words the turn renderer writes for an event, apart from the state that decides when it writes them.
import { ToolDecision, type Compacted, type InputSpilled, type TurnDone } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { wrapWords } from "./columns.js";

/**
 * What the thinking cap did, in words. The event's count is where the cap
 * fired (the --max-thinking budget left), not the reasoning the reply ended
 * up with: the server keeps streaming while the stop request travels, and a
 * reply that finished first ("no active completion for this id") kept all of
 * its reasoning.
 */
export function thinkingCapText(capTokens: number, accepted: boolean, message: string): string {
  if (accepted)
    return `thinking cap: reasoning stopped after ${capTokens} tokens (the thinking budget); the model answers now`;
  if (/no active completion/i.test(message)) {
    return `thinking cap of ${capTokens} tokens reached, but the reply had already finished when llama-server was asked to stop reasoning; nothing was cut`;
  }
  return `thinking cap of ${capTokens} tokens reached; llama-server refused to stop reasoning (${message})`;
}

export function sizeText(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  return `${(bytes / 1024).toFixed(1)} KB`;
}

const count = (n: number, what: string) => `${n.toLocaleString("en-US")} ${what}${n === 1 ? "" : "s"}`;

const duration = (ms: number) =>
  ms < 60_000 ? `${Math.round(ms / 100) / 10} s` : `${Math.round(ms / 6_000) / 10} min`;

/**
 * The start of the retry line: why the request was cut, what of it the
 * person already saw and is now discarded, that it is sent again, and how
 * long the server is waited for (and how not to wait) when loopd says.
 */
export function retryWaitingText(
  code: string,
  reason: string,
  attempt: number,
  maxAttempts: number,
  discardedChars: number,
  discardedThinking: number,
  waitMs = 0,
): string {
  const shown = [
    ...(discardedChars ? [`${count(discardedChars, "character")} of reply`] : []),
    ...(discardedThinking ? [`${count(discardedThinking, "token")} of thinking`] : []),
  ];
  const why = reason.length > 160 ? `${reason.slice(0, 160)}…` : reason;
  return (
    `↻ the model request was cut off (${code}: ${why})` +
    (shown.length ? `; the ${shown.join(" and ")} shown above are discarded` : "") +
    `; sending it again once the server is back` +
    (waitMs
      ? `, waiting up to ${duration(waitMs)} for it (retry ${attempt} of ${maxAttempts}; Ctrl-C stops the turn)`
      : ` (retry ${attempt} of ${maxAttempts})`)
  );
}

/** The end of the retry line: how long the server was gone and what the request cost it to read again. */
export function retryResentText(waitedMs: number, cached: number, reread: number): string {
  const lost = cached === 0 ? "its prompt cache was lost, " : "";
  return (
    ` — back after ${(waitedMs / 1000).toFixed(1)} s: ${lost}${count(reread, "prompt token")} read again` +
    (cached ? ` (${count(cached, "token")} still cached)` : "")
  );
}

/** The decision under a call's first line, "│ " before each line, wrapped at spaces to the width. */
export function decisionLines(
  s: Style,
  d: ToolDecision,
  rule: string,
  proposalId: string,
  width: number | undefined,
): string[] {
  const why = rule ? ` (${rule})` : "";
  const [text, colour] =
    d === ToolDecision.ALLOWED
      ? [`allowed${why}`, s.green]
      : d === ToolDecision.DENIED
        ? [`denied${why}`, s.red]
        : d === ToolDecision.STAGED
          ? [
              `staged for approval${why}${proposalId ? ` — proposal ${proposalId}: run \`boxmaker approve ${proposalId}\`` : ""}`,
              s.yellow,
            ]
          : ["no decision", s.dim];
  return wrapWords(text, width === undefined ? undefined : width - 2).map((l) => s.cyan("│ ") + colour(l));
}

/** A block of the user's message that went to the blob store, and what the model sees of it. */
export function inputSpilledText(v: InputSpilled): string {
  const kb = (n: bigint) => `${(Number(n) / 1024).toFixed(1)} KB`;
  return (
    `input: a ${v.kind} block of ${kb(v.bytes)} (${v.lines} lines) went to blob:sha256:${v.blobSha256.slice(0, 12)}…; ` +
    `the model sees ${v.form === "reduced" ? "all of it, reduced" : "an excerpt"} (${kb(v.shownBytes)}) and can read_blob / grep_blob the rest`
  );
}

/** A compaction: what was folded, carried and kept. */
export function compactionText(v: Compacted): string {
  return (
    `compacted into epoch ${v.epoch} (${v.reason}): ${v.foldedMessages} messages folded into a ${v.summaryBytes}-byte summary` +
    (v.carriedFoldBytes ? `, ${v.carriedFoldBytes} bytes of earlier folds carried verbatim` : "") +
    `, ${v.keptMessages} kept` +
    (v.spilledBlocks ? `, ${v.spilledBlocks} large blocks spilled to blobs` : "") +
    (v.beforeTokens ? ` (was ${v.beforeTokens} tokens)` : "")
  );
}

/** The closing line's facts, " · " between them; `slot` is the turn's, from its turn_started. */
export function turnSummaryText(v: TurnDone, slot: number | undefined): string {
  const t = v.timings;
  const prompt = (t?.cacheN ?? 0) + (t?.promptN ?? 0);
  return [
    v.finishReason,
    `${v.iterations} request${v.iterations === 1 ? "" : "s"}`,
    `${prompt} prompt tokens (${Math.round(v.cacheHitRatio * 100)}% cached)`,
    `${t?.predictedN ?? 0} generated`,
    `${(v.wallMs / 1000).toFixed(1)} s`,
    ...(v.spilledBlocks ? [`${v.spilledBlocks} input block${v.spilledBlocks === 1 ? "" : "s"} spilled`] : []),
    ...(v.compactions ? [`${v.compactions} compaction${v.compactions === 1 ? "" : "s"}`] : []),
    // The session's Σprompt_n over the tokens truly new (1.00× is every byte reused).
    ...(v.cacheHealth?.requests ? [`reuse ${v.cacheHealth.ratio.toFixed(2)}×`] : []),
    // The server slot whose cache the turn used (a turn that never started has none).
    ...(slot !== undefined ? [`slot ${slot}`] : []),
  ].join(" · ");
}
