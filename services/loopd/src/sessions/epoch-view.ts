import { blobRefs } from "../prepass/index.js";
import { replayJson } from "./replay.js";
import type { StoredMessage } from "./stored-message.js";

/** Messages weighed without being walked: how many, and the UTF-8 bytes of their replay texts. */
export interface Tally {
  count: number;
  bytes: number;
}

/**
 * What each request needs from the current epoch — the replay texts of its
 * messages, what they weigh, which tool calls still lack a result, the blobs
 * they name — kept by applyRecord as each record is folded in, so a request
 * costs the same in a session of a thousand tokens and in one of two hundred
 * thousand. An epoch never changes its system prompt and its messages are
 * only appended, so each is read once; a new epoch (compaction) gets a new
 * view. Only applyRecord calls `add`: everything else reads.
 */
export class EpochView {
  private readonly msgs: StoredMessage[] = [];
  /** The replay texts, the system message first: the request's `messages` array, unjoined. */
  private readonly parts: string[];
  /** `parts` joined, until the next message arrives. */
  private joined: string | undefined;
  private arrayBytes: number;
  private readonly all: Tally = { count: 0, bytes: 0 };
  private readonly tail: Tally = { count: 0, bytes: 0 };
  private readonly open = new Map<string, string>();
  private readonly blobs: Set<string>;

  constructor(
    readonly epoch: number,
    readonly systemJson: string,
  ) {
    this.parts = [systemJson];
    this.arrayBytes = 2 + Buffer.byteLength(systemJson); // the brackets and the system message
    this.blobs = new Set(blobRefs(systemJson));
  }

  add(m: StoredMessage): void {
    const json = replayJson(m);
    const bytes = Buffer.byteLength(json);
    this.msgs.push(m);
    this.parts.push(json);
    this.joined = undefined;
    this.arrayBytes += 1 + bytes; // a comma and the message
    this.all.count++;
    this.all.bytes += bytes;
    if (this.trackRole(m.json) === "assistant") {
      this.tail.count = 0;
      this.tail.bytes = 0;
    } else {
      this.tail.count++;
      this.tail.bytes += bytes;
    }
    for (const b of blobRefs(m.json)) this.blobs.add(b);
  }

  /** Notes the tool calls a message opens or answers; returns its role when it had to be read for that. */
  private trackRole(json: string): string | undefined {
    // Only an assistant message or a tool result matters here; the rest are not parsed at all.
    if (!json.includes('"assistant"') && !json.includes('"tool_call_id"')) return undefined;
    let msg: { role?: string; tool_calls?: { id: string; function: { name: string } }[]; tool_call_id?: string };
    try {
      msg = JSON.parse(json) as typeof msg;
    } catch {
      // Already on disk when it is applied: a text no server would accept opens and answers nothing.
      return undefined;
    }
    if (msg.role === "assistant") for (const tc of msg.tool_calls ?? []) this.open.set(tc.id, tc.function.name);
    if (msg.role === "tool" && msg.tool_call_id) this.open.delete(msg.tool_call_id);
    return msg.role;
  }

  /** The epoch's messages, in order. */
  get messages(): readonly StoredMessage[] {
    return this.msgs;
  }

  /**
   * The request's `messages` array, spliced from the stored JSON texts (see
   * replay.ts for why nothing is re-serialized).
   */
  json(): string {
    this.joined ??= `[${this.parts.join(",")}]`;
    return this.joined;
  }

  /** How many messages `json()` holds, the system message included. */
  get length(): number {
    return this.parts.length;
  }

  /** The messages after the first `n` of `json()`, as a JSON array: what follows a prefix inferproxy keeps. */
  jsonAfter(n: number): string {
    return `[${this.parts.slice(n).join(",")}]`;
  }

  /** The UTF-8 size of `json()`, without building or measuring it. */
  get bytes(): number {
    return this.arrayBytes;
  }

  /** The epoch's messages (the system message not counted). */
  get tally(): Readonly<Tally> {
    return this.all;
  }

  /** The messages after the last assistant message: what the server has not read when its slot holds the rest. */
  get sinceAnswer(): Readonly<Tally> {
    return this.tail;
  }

  /** Blob pointers named by the system prompt and the messages, in order of first appearance. */
  get blobRefs(): string[] {
    return [...this.blobs];
  }

  /** Tool calls of the epoch's assistant messages that have no tool result yet. */
  get openToolCalls(): { id: string; name: string }[] {
    return [...this.open].map(([id, name]) => ({ id, name }));
  }

  get openToolCallCount(): number {
    return this.open.size;
  }
}

/** What holds a view: a SessionState (named structurally, so this module need not import it). */
type Viewed = { readonly view: EpochView };

/** The request's `messages` array (EpochView.json). */
export function buildMessagesJson(s: Viewed): string {
  return s.view.json();
}

/** The UTF-8 size of `buildMessagesJson(s)`, without building or measuring it. */
export function messagesBytes(s: Viewed): number {
  return s.view.bytes;
}

/** The blob pointers the current epoch names (what the store must keep for this session). */
export function epochBlobRefs(s: Viewed): string[] {
  return s.view.blobRefs;
}

/**
 * Tool calls of the epoch's assistant messages that have no tool result yet.
 * After a crash these get an explicit "interrupted" result so the
 * conversation stays well-formed for the template and the model.
 */
export function unansweredToolCalls(s: Viewed): { id: string; name: string }[] {
  return s.view.openToolCalls;
}
