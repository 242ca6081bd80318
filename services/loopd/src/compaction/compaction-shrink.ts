import type { StoredMessage } from "../sessions/session-state.js";
import { quarterContextBytes } from "./compaction-policy.js";
import type { Session } from "../sessions/session.js";
import { bytesPerToken } from "../sessions/token-counts.js";
import { cutMiddle, fitRequest } from "./compaction-fit.js";
import type { ServerTokens } from "./server-tokens.js";

/** Spills large blocks of a message text to the blob store (the inbound pre-pass with a given threshold). */
export type Spill = (
  s: Session,
  text: string,
  thresholdBytes: number,
  signal: AbortSignal,
) => Promise<{ text: string; blocks: number }>;

/** What shrinking needs: the server's counts and, when there is a blob store, the spill to it. */
export interface ShrinkDeps {
  tokens: ServerTokens;
  spill?: Spill;
}

/** The carried messages as they go into the new epoch, and how many blocks were spilled and texts cut. */
export interface Shrunk {
  json: string[];
  spilled: number;
  cut: number;
}

/**
 * The kept messages, each user message or tool result over a quarter of the
 * context by the server's count spilled to the blob store (its large blocks),
 * and what is still over cut to its start and end with a marker (its whole
 * text stays in the session log, and a capped tool result's pointer is at
 * its start). Without a count, bytes at the session's ratio decide, as before.
 */
export async function shrinkKept(
  d: ShrinkDeps,
  s: Session,
  kept: readonly StoredMessage[],
  nCtx: number,
  signal: AbortSignal,
): Promise<Shrunk> {
  const quarter = Math.floor(nCtx / 4);
  const out: string[] = [];
  let spilled = 0;
  let cut = 0;
  for (const m of kept) {
    const msg = JSON.parse(m.json) as { role?: string; content?: unknown };
    if (typeof msg.content !== "string" || (msg.role !== "user" && msg.role !== "tool")) {
      out.push(m.json);
      continue;
    }
    let text = msg.content;
    const bytes = Buffer.byteLength(text);
    const first = (await d.tokens.texts([text], signal))?.[0];
    const tokens = first ?? Math.ceil(bytes / bytesPerToken(s.state));
    if (
      tokens <= quarter &&
      (first !== undefined || bytes <= Math.max(2_048, quarterContextBytes(nCtx, bytesPerToken(s.state))))
    ) {
      out.push(m.json);
      continue;
    }
    if (d.spill) {
      // The byte threshold this text's own bytes per token gives a quarter of the context.
      const above = Math.max(1_024, Math.floor((quarter * bytes) / Math.max(1, tokens)));
      const r = await d.spill(s, text, above, signal);
      if (r.blocks) {
        spilled += r.blocks;
        text = r.text;
      }
    }
    if (first !== undefined) {
      const fit = await fitRequest({
        build: (chars) => cutMiddle(text, chars),
        count: async (t) => (await d.tokens.texts([t], signal))?.[0],
        budget: text.length,
        limit: quarter,
        minBudget: 512,
      });
      if (fit.request !== text) cut++;
      text = fit.request;
    }
    out.push(text === msg.content ? m.json : JSON.stringify({ ...msg, content: text }));
  }
  return { json: out, spilled, cut };
}
