import { replayJson } from "./replay.js";
import { blobRefs } from "./prepass/index.js";
import type { SessionState } from "./session-state.js";

/**
 * What each request needs from the current epoch — the replay texts of its
 * messages and which tool calls still lack a result — kept up to date as
 * records are appended, so a request costs the same in a session of a
 * thousand tokens and in one of two hundred thousand. History is append-only
 * and an epoch never changes its system prompt, so new messages are only ever
 * folded in once; a new epoch (compaction) starts a new view.
 */
interface EpochView {
  epoch: number;
  systemJson: string;
  /** How far into `history` this view has read. */
  upto: number;
  parts: string[];
  /** UTF-8 bytes of `parts` joined as an array: what the request's messages weigh. */
  bytes: number;
  /** `parts` joined, until the next message arrives. */
  joined?: string;
  open: Map<string, string>;
  /** Blob pointers named by the system prompt and the messages, in order of first appearance. */
  blobs: Set<string>;
  /** The token inferproxy gave an array of this epoch's first `count` messages (sent-prefix.ts). */
  sent?: { count: number; token: string };
}

const views = new WeakMap<SessionState, EpochView>();

function viewOf(s: SessionState): EpochView {
  let v = views.get(s);
  if (!v || v.epoch !== s.epoch.epoch || v.systemJson !== s.epoch.systemJson || v.upto > s.history.length) {
    v = {
      epoch: s.epoch.epoch,
      systemJson: s.epoch.systemJson,
      upto: 0,
      parts: [s.epoch.systemJson],
      bytes: 2 + Buffer.byteLength(s.epoch.systemJson), // the brackets and the system message
      open: new Map(),
      blobs: new Set(blobRefs(s.epoch.systemJson)),
    };
    views.set(s, v);
  }
  for (; v.upto < s.history.length; v.upto++) {
    const m = s.history[v.upto]!;
    if (m.epoch !== v.epoch) continue;
    const json = replayJson(m);
    v.parts.push(json);
    v.bytes += 1 + Buffer.byteLength(json); // a comma and the message
    v.joined = undefined;
    trackToolCalls(v.open, m.json);
    for (const b of blobRefs(m.json)) v.blobs.add(b);
  }
  return v;
}

function trackToolCalls(open: Map<string, string>, json: string): void {
  // Only assistant messages with tool calls and tool results change the set; skip parsing the rest.
  if (!json.includes('"tool_calls"') && !json.includes('"tool_call_id"')) return;
  const msg = JSON.parse(json) as {
    role: string;
    tool_calls?: { id: string; function: { name: string } }[];
    tool_call_id?: string;
  };
  if (msg.role === "assistant") for (const tc of msg.tool_calls ?? []) open.set(tc.id, tc.function.name);
  if (msg.role === "tool" && msg.tool_call_id) open.delete(msg.tool_call_id);
}

/**
 * The request's `messages` array, spliced from the stored JSON texts (see
 * replay.ts for why nothing is re-serialized).
 */
export function buildMessagesJson(s: SessionState): string {
  const v = viewOf(s);
  v.joined ??= `[${v.parts.join(",")}]`;
  return v.joined;
}

/** How many messages `buildMessagesJson(s)` holds, the system message included. */
export function messageCount(s: SessionState): number {
  return viewOf(s).parts.length;
}

/** The messages after the first `n` of `buildMessagesJson(s)`, as a JSON array: what follows a prefix inferproxy keeps. */
export function messagesJsonAfter(s: SessionState, n: number): string {
  return `[${viewOf(s).parts.slice(n).join(",")}]`;
}

/**
 * What inferproxy holds of this epoch (see sent-prefix.ts). Kept on the view,
 * so a new epoch, which starts a new view, forgets it with everything else.
 */
export function sentPrefix(s: SessionState): { count: number; token: string } | undefined {
  return viewOf(s).sent;
}

export function setSentPrefix(s: SessionState, sent: { count: number; token: string } | undefined): void {
  viewOf(s).sent = sent;
}

/** The UTF-8 size of `buildMessagesJson(s)`, without building or measuring it. */
export function messagesBytes(s: SessionState): number {
  return viewOf(s).bytes;
}

/** The blob pointers the current epoch names (what the store must keep for this session). */
export function epochBlobRefs(s: SessionState): string[] {
  return [...viewOf(s).blobs];
}

/**
 * Tool calls of the epoch's assistant messages that have no tool result yet.
 * After a crash these get an explicit "interrupted" result so the
 * conversation stays well-formed for the template and the model.
 */
export function unansweredToolCalls(s: SessionState): { id: string; name: string }[] {
  return [...viewOf(s).open].map(([id, name]) => ({ id, name }));
}
