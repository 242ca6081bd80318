import { afterEach, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { buildMessagesJson, epochBlobRefs, messagesBytes, unansweredToolCalls } from "../src/sessions/epoch-view.js";
import type { LogRecord } from "../src/sessions/log-record.js";
import { blobRefs } from "../src/prepass/index.js";
import { replayableJson } from "../src/sessions/replay.js";
import { forgetSent, noteSent, requestMessages } from "../src/model-requests/sent-prefix.js";
import { applyRecord, foldRecords, type SessionState } from "../src/sessions/session-state.js";
import { bytesPerToken, estimateNewPromptTokens, recordPromptCount, tokensOf } from "../src/sessions/token-counts.js";

/*
 * The epoch view is kept by applyRecord, one record at a time. These
 * properties hold it to a fold from scratch over the same records, done the
 * slow, obvious way (what loopd used to do on every request): for any
 * sequence of records, epochs, cut-off tool calls and answers to calls that
 * were never made included.
 */

const HEAD: LogRecord = { t: "session", id: "s", role: "main", title: "", parent_id: "", slot: 0, at: 1 };
const EPOCH_0: LogRecord = {
  t: "epoch",
  epoch: 0,
  system_json: '{"role":"system","content":"sys"}',
  tools_json: "[]",
  at: 1,
};

const blob = fc.stringMatching(/^[0-9a-f]{64}$/).map((h) => `blob:sha256:${h}`);
const text = fc.oneof(
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.tuple(fc.string({ maxLength: 10 }), blob).map(([a, b]) => `${a} ${b}`),
  fc.constant('say "assistant" and "tool_call_id" and "tool_calls"'),
);
const callId = fc.constantFrom("c1", "c2", "c3", "c4");
const args = fc.oneof(
  fc.constant('{"path":"a.txt"}'),
  fc.constant("{}"),
  // Cut off by max_tokens, or not an object: what the request must repair.
  fc.constant('{"path":"'),
  fc.constant("[1,2]"),
  fc.string({ maxLength: 12 }),
);

/** A message of some role, as JSON text; `epoch` and flags are decided by the sequence. */
const message = fc.oneof(
  text.map((content) => JSON.stringify({ role: "user", content })),
  fc
    .record({
      content: text,
      calls: fc.array(fc.record({ id: callId, name: fc.constantFrom("read_file", "write_file"), args }), {
        maxLength: 3,
      }),
    })
    .map(({ content, calls }) =>
      JSON.stringify({
        role: "assistant",
        content,
        ...(calls.length
          ? {
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: "function",
                function: { name: c.name, arguments: c.args },
              })),
            }
          : {}),
      }),
    ),
  fc
    .record({ id: callId, content: text })
    .map(({ id, content }) => JSON.stringify({ role: "tool", tool_call_id: id, content })),
  // Not JSON at all (a hand-edited log): opens and answers nothing, and is sent as stored.
  fc.constant('{"role":"assistant","tool_calls":[oops'),
);

type Step =
  | { k: "message"; json: string; contextTokens?: number; carried: boolean; staleEpoch: boolean }
  | { k: "epoch"; system: string; tools: string }
  | { k: "other"; rec: LogRecord }
  | { k: "count"; bytes: number; tokens: number }
  | { k: "sent"; back: number; token: string };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant("message" as const),
      json: message,
      contextTokens: fc.option(fc.nat(100_000), { nil: undefined }),
      carried: fc.boolean(),
      // Now and then a message tagged with the epoch before: neither way counts it.
      staleEpoch: fc.nat(9).map((n) => n === 0),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant("epoch" as const),
      system: text.map((content) => JSON.stringify({ role: "system", content })),
      tools: fc.constantFrom("[]", '[{"type":"function","function":{"name":"read_file"}}]'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom<LogRecord>(
        { t: "turn_start", turn: 1, at: 2 },
        { t: "turn_end", turn: 1, reason: "stop", at: 2, context_tokens: 500 },
        { t: "turn_end", turn: 1, reason: "interrupted", at: 2 },
        { t: "usage", context_tokens: 0, at: 2 },
        { t: "usage", context_tokens: 1234, at: 2 },
        { t: "note", text: "later", at: 2 },
        { t: "mode", mode: "read-only", at: 2 },
      )
      .map((rec) => ({ k: "other" as const, rec })),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant("count" as const),
      bytes: fc.integer({ min: 1, max: 1_000_000 }),
      tokens: fc.integer({ min: 1, max: 300_000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ k: fc.constant("sent" as const), back: fc.nat(3), token: fc.string({ maxLength: 4 }) }),
  },
);

/** The current epoch worked out from the history, each time from nothing. */
function fromScratch(st: SessionState) {
  const messages = st.history.filter((m) => m.epoch === st.epoch.epoch);
  const replays = messages.map((m) => replayableJson(m.json));
  const json = `[${[st.epoch.systemJson, ...replays].join(",")}]`;
  const parsed = messages.map((m) => {
    try {
      return JSON.parse(m.json) as { role?: string; tool_calls?: { id: string; function: { name: string } }[] };
    } catch {
      return {};
    }
  });
  const open = new Map<string, string>();
  for (const msg of parsed as { role?: string; tool_calls?: []; tool_call_id?: string }[]) {
    if (msg.role === "assistant")
      for (const tc of (msg.tool_calls ?? []) as { id: string; function: { name: string } }[])
        open.set(tc.id, tc.function.name);
    if (msg.role === "tool" && msg.tool_call_id) open.delete(msg.tool_call_id);
  }
  const lastAnswer = parsed.map((m) => m.role).lastIndexOf("assistant");
  const since = messages.slice(lastAnswer + 1);
  // The estimate as it was computed when it walked the epoch: one rounding per message.
  const walked =
    st.contextTokens > 0
      ? since.reduce((a, m) => a + tokensOf(st, m.json), 0)
      : tokensOf(st, st.epoch.systemJson) +
        tokensOf(st, st.epoch.toolsJson) +
        replays.reduce((a, j) => a + tokensOf(st, j), 0);
  return {
    replays,
    json,
    open: [...open].map(([id, name]) => ({ id, name })),
    blobs: blobRefs([st.epoch.systemJson, ...messages.map((m) => m.json)].join("\n")),
    walked,
    counted: st.contextTokens > 0 ? since.length : messages.length,
  };
}

function record(st: SessionState, s: Step, at: number): LogRecord | undefined {
  switch (s.k) {
    case "message":
      return {
        t: "message",
        epoch: s.staleEpoch ? st.epoch.epoch - 1 : st.epoch.epoch,
        json: s.json,
        at,
        ...(s.carried ? { carried: true as const } : {}),
        ...(s.contextTokens !== undefined && s.json.includes('"assistant"') ? { context_tokens: s.contextTokens } : {}),
      };
    case "epoch":
      return { t: "epoch", epoch: st.epoch.epoch + 1, system_json: s.system, tools_json: s.tools, at };
    case "other":
      return { ...s.rec, at };
    default:
      return undefined;
  }
}

describe("the epoch view applyRecord keeps", () => {
  it("equals a fold from scratch after every record of any sequence", () => {
    let checked = 0;
    let repaired = 0;
    let open = 0;
    let later = 0;
    let prefixed = 0;
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const st = foldRecords([HEAD, EPOCH_0]);
        const applied: LogRecord[] = [];
        for (const [i, s] of steps.entries()) {
          const rec = record(st, s, 2 + i);
          if (rec) {
            applyRecord(st, rec);
            applied.push(rec);
          } else if (s.k === "count") recordPromptCount(st, s.bytes, s.tokens);
          else if (s.k === "sent") noteSent(st, Math.max(1, st.view.length - s.back), s.token);

          const want = fromScratch(st);
          expect(buildMessagesJson(st)).toBe(want.json);
          expect(messagesBytes(st)).toBe(Buffer.byteLength(want.json));
          expect(unansweredToolCalls(st)).toEqual(want.open);
          expect(epochBlobRefs(st)).toEqual(want.blobs);
          // Never under what walking the epoch gave, and over it by less than a token a message.
          const estimate = estimateNewPromptTokens(st);
          expect(estimate).toBeGreaterThanOrEqual(want.walked);
          expect(estimate).toBeLessThanOrEqual(want.walked + want.counted);

          // The next request: the messages after what inferproxy holds, which with them make the whole array.
          const r = requestMessages(st);
          expect(r.count).toBe(want.replays.length + 1);
          const held = st.served.sent;
          const parts = [st.epoch.systemJson, ...want.replays];
          if (held && held.count <= parts.length) {
            expect(r.afterMessagesToken).toBe(held.token);
            expect(r.messagesJson).toBe(`[${parts.slice(held.count).join(",")}]`);
          } else expect(r).toMatchObject({ messagesJson: want.json, afterMessagesToken: "" });
          if (want.open.length) open++;
          if (st.epoch.epoch > 0) later++;
          if (r.afterMessagesToken) prefixed++;
          repaired += want.replays.filter((j, n) => j !== st.view.messages[n]!.json).length;
          checked++;
        }
        // The same records folded in one go give the same view.
        const again = foldRecords([HEAD, EPOCH_0, ...applied]);
        expect(buildMessagesJson(again)).toBe(buildMessagesJson(st));
        expect(unansweredToolCalls(again)).toEqual(unansweredToolCalls(st));
        expect(epochBlobRefs(again)).toEqual(epochBlobRefs(st));
        // What the server counted is this process's, not the log's: a fold starts without it.
        expect(again.served).toEqual({});
        forgetSent(st);
        expect(requestMessages(st, true).messagesJson).toBe(buildMessagesJson(st));
      }),
      { numRuns: 500 },
    );
    // The generator reaches what the view exists for: many states, and replays that differ from the log.
    expect(checked).toBeGreaterThan(1_500);
    expect(repaired).toBeGreaterThan(100);
    expect(Math.min(open, later, prefixed)).toBeGreaterThan(100);
  });

  it("forgets inferproxy's prefix at a new epoch, whose array it has never seen", () => {
    const st = foldRecords([
      HEAD,
      { t: "epoch", epoch: 0, system_json: '{"role":"system","content":"a"}', tools_json: "[]", at: 1 },
      { t: "message", epoch: 0, json: '{"role":"user","content":"q"}', at: 1 },
    ]);
    noteSent(st, 2, "tok");
    expect(requestMessages(st).afterMessagesToken).toBe("tok");
    applyRecord(st, { t: "epoch", epoch: 1, system_json: '{"role":"system","content":"b"}', tools_json: "[]", at: 2 });
    expect(requestMessages(st)).toEqual({
      messagesJson: '[{"role":"system","content":"b"}]',
      afterMessagesToken: "",
      count: 1,
    });
  });
});

describe("a request on a long session", () => {
  afterEach(() => vi.restoreAllMocks());

  it("reads the view's tallies, not the epoch: no message is parsed, measured or visited", () => {
    const records: LogRecord[] = [
      HEAD,
      { t: "epoch", epoch: 0, system_json: '{"role":"system","content":"sys"}', tools_json: "[]", at: 1 },
    ];
    for (let i = 0; i < 5_000; i++) {
      records.push({ t: "message", epoch: 0, json: JSON.stringify({ role: "user", content: `q${i}` }), at: 2 });
      records.push({
        t: "message",
        epoch: 0,
        json: JSON.stringify({ role: "assistant", content: `a${i}` }),
        at: 2,
        context_tokens: 10 * i + 10,
      });
    }
    records.push({ t: "message", epoch: 0, json: '{"role":"user","content":"next"}', at: 3 });
    const st = foldRecords(records);
    recordPromptCount(st, 400_000, 100_000);
    let visited = 0;
    st.history = new Proxy(st.history, {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) visited++;
        return Reflect.get(target, key, receiver);
      },
    });
    const parse = vi.spyOn(JSON, "parse");
    const byteLength = vi.spyOn(Buffer, "byteLength");

    const fresh = estimateNewPromptTokens(st);
    const bytes = messagesBytes(st);
    expect(requestMessages(st).count).toBe(10_002);

    expect(visited).toBe(0);
    expect(parse).not.toHaveBeenCalled();
    // What the epoch's messages weigh is known; only the tools array is measured here.
    expect(byteLength.mock.calls.length).toBeLessThanOrEqual(1);
    expect(fresh).toBe(Math.ceil(Buffer.byteLength('{"role":"user","content":"next"}') / bytesPerToken(st)) + 9);
    expect(bytes).toBeGreaterThan(100_000);
  });
});
