import { randomUUID } from "node:crypto";
import { ErrorReason, failedPrecondition } from "@boxmaker/common";
import { parseJsonArray } from "./json-array-check.js";

/**
 * One conversation's messages array as UTF-8 bytes, with room to grow: the
 * next request appends its new messages in place, so the long part is never
 * copied or re-encoded again (a fresh 800 KB buffer per request costs more in
 * page faults than the copy itself).
 */
class Arena {
  readonly buf: Buffer;
  /** Bytes written; only an array ending here may grow in place. */
  used = 0;
  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(capacity);
  }
}

/** A remembered array, without its closing bracket: the first `len` bytes of its arena. */
export interface HeldArray {
  readonly arena: Arena;
  readonly len: number;
}

/** A messages array without its closing bracket: a remembered one (`base`), then `text`. */
export interface OpenMessages {
  base?: HeldArray;
  text: string;
}

/** The smallest arena: most conversations never outgrow it. */
const MIN_ARENA = 64 * 1024;

/** `base` followed by `more`: in place when `base` is its arena's latest end and there is room, else in a new arena. */
function extend(base: HeldArray | undefined, more: Buffer): HeldArray {
  if (base && base.len === base.arena.used && base.len + more.length <= base.arena.buf.length) {
    more.copy(base.arena.buf, base.len);
    base.arena.used += more.length;
    return { arena: base.arena, len: base.arena.used };
  }
  const len = (base?.len ?? 0) + more.length;
  const arena = new Arena(Math.max(MIN_ARENA, 2 * len));
  if (base) base.arena.buf.copy(arena.buf, 0, 0, base.len);
  more.copy(arena.buf, base?.len ?? 0);
  arena.used = len;
  return { arena, len };
}

/** A request body as the chunks that go on the wire, in order, and their total length. */
export interface CompletionBody {
  chunks: readonly Uint8Array[];
  length: number;
  /** The messages array it sent, for `MessagesMemory.remember`. */
  held: HeldArray;
}

/**
 * The body of a completion request: `head`, the messages array (`open` and
 * its closing bracket), `tail`. The array's bytes go out from its arena as
 * they are; only `head`, the new messages and `tail` are encoded.
 */
export function completionBody(head: string, open: OpenMessages, tail: string): CompletionBody {
  const held = extend(open.base, Buffer.from(open.text));
  const start = Buffer.from(head);
  const end = Buffer.from(`]${tail}`);
  return {
    chunks: [start, held.arena.buf.subarray(0, held.len), end],
    length: start.length + held.len + end.length,
    held,
  };
}

/**
 * The messages arrays of recent requests, so a caller can send only what it
 * appended (CompleteRequest.after_messages_token) instead of the whole
 * conversation on every request: at 200k tokens that is ~800 KB through a
 * gRPC hop, re-encoded and re-checked each time.
 *
 * Each array is kept as the UTF-8 bytes the server got, without the closing
 * bracket. The next request's array is those bytes followed by the new
 * messages', appended in place: exactly the earlier request's bytes, which
 * the server's prompt cache needs, and per request only the new messages are
 * encoded and copied.
 */
export class MessagesMemory {
  /** Token → the array, without its closing bracket; oldest first. */
  private readonly open = new Map<string, HeldArray>();

  /** `keep`: arrays remembered at most; one or two per busy slot is what callers use. */
  constructor(private readonly keep = 16) {}

  /**
   * The whole array, open: the remembered one named by `token`, then the
   * elements of `suffixJson` (a JSON array, checked here; the remembered part
   * was checked when it arrived).
   */
  splice(token: string, suffixJson: string): OpenMessages {
    const base = this.open.get(token);
    if (base === undefined) {
      throw failedPrecondition(
        "after_messages_token names no messages array inferproxy remembers (it restarted or forgot it); send the whole array",
        { reason: ErrorReason.PREFIX_UNKNOWN, field: "after_messages_token" },
      );
    }
    const inner = arrayInner(suffixJson);
    return { base, text: inner === "" ? "" : `,${inner}` };
  }

  /**
   * Keeps an array (the checked array a body sent) and returns its token.
   * The token it extended, if any, is dropped: the caller moves on to the
   * new one.
   */
  remember(open: HeldArray, extended?: string): string {
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

/** A checked JSON array without its closing bracket (a slice: no copy of the long part). */
export function openOf(messagesJson: string): OpenMessages {
  return { text: messagesJson.slice(0, messagesJson.lastIndexOf("]")) };
}

/** The text between the brackets of a JSON array ("" for an empty one); INVALID_ARGUMENT for anything else. */
function arrayInner(text: string): string {
  return parseJsonArray(text, "messages_json").length === 0 ? "" : text.trim().slice(1, -1).trim();
}
