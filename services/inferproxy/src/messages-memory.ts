import { randomUUID } from "node:crypto";
import { failedPrecondition } from "@boxmaker/common";
import { parseJsonArray } from "./json-array-check.js";

/**
 * The messages arrays of recent requests, so a caller can send only what it
 * appended (CompleteRequest.after_messages_token) instead of the whole
 * conversation on every request: at 200k tokens that is ~800 KB through a
 * gRPC hop, re-encoded and re-checked each time.
 *
 * Each array is kept without its closing bracket. Extending one is then a
 * string concatenation, which V8 does without copying the long part (a rope),
 * and the bytes the server gets are exactly the earlier request's bytes
 * followed by the new messages' — what its prompt cache needs.
 */
export class MessagesMemory {
  /** Token → the array's text up to (not including) its closing bracket; oldest first. */
  private readonly open = new Map<string, string>();

  /** `keep`: arrays remembered at most; one or two per busy slot is what callers use. */
  constructor(private readonly keep = 16) {}

  /**
   * The whole array: the remembered one named by `token`, then the elements
   * of `suffixJson` (a JSON array, checked here; the remembered part was
   * checked when it arrived). `open` is the same text without its closing
   * bracket, for `remember`.
   */
  splice(token: string, suffixJson: string): { messagesJson: string; open: string } {
    const prefix = this.open.get(token);
    if (prefix === undefined) {
      throw failedPrecondition(
        "after_messages_token names no messages array inferproxy remembers (it restarted or forgot it); send the whole array",
        { reason: "prefix_unknown", field: "after_messages_token" },
      );
    }
    const inner = arrayInner(suffixJson);
    const open = inner === "" ? prefix : `${prefix},${inner}`;
    return { messagesJson: `${open}]`, open };
  }

  /**
   * Keeps an array (given as `open`: its checked text without the closing
   * bracket) and returns its token. The token it extended, if any, is
   * dropped: the caller moves on to the new one.
   */
  remember(open: string, extended?: string): string {
    if (extended) this.open.delete(extended);
    const token = randomUUID();
    this.open.set(token, open);
    while (this.open.size > this.keep) this.open.delete(this.open.keys().next().value!);
    return token;
  }

  get size(): number {
    return this.open.size;
  }
}

/** A checked JSON array's text without its closing bracket (a slice: no copy of the long part). */
export function openOf(messagesJson: string): string {
  return messagesJson.slice(0, messagesJson.lastIndexOf("]"));
}

/** The text between the brackets of a JSON array ("" for an empty one); INVALID_ARGUMENT for anything else. */
function arrayInner(text: string): string {
  return parseJsonArray(text, "messages_json").length === 0 ? "" : text.trim().slice(1, -1).trim();
}
