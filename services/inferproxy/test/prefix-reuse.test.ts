// A caller that sends only the messages it appended (after_messages_token)
// must get exactly the request it would have got sending the whole array:
// the server's prompt cache depends on every earlier byte.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { ErrorReason, RpcError, Status } from "@boxmaker/common";
import { type CompletionBody, MessagesMemory, completionBody, openOf } from "../src/completion/messages-memory.js";
import { collect, startStack, userMessages, type Stack } from "./support/stack.js";

const HEAD = '{"id_slot":0,"messages":';
const TAIL = ',"tools":[]}';
const bytesOf = (b: CompletionBody) => Buffer.concat(b.chunks);
/** Remembers an array the way the service does: as the array of the body it sent. */
const rememberWhole = (m: MessagesMemory, json: string, extended?: string) =>
  m.remember(completionBody(HEAD, openOf(json), TAIL).held, extended);

describe("MessagesMemory", () => {
  it("a body spliced onto any remembered array has exactly the bytes of the whole array's body", () => {
    const msg = fc.record({ role: fc.constantFrom("user", "assistant", "tool"), content: fc.string() });
    fc.assert(
      fc.property(
        fc.array(msg, { minLength: 1 }),
        fc.array(fc.array(msg), { maxLength: 4 }),
        fc.constantFrom("", " ", "\n"),
        (a, suffixes, ws) => {
          const m = new MessagesMemory();
          const first = JSON.stringify(a, null, ws ? 1 : undefined);
          let token = rememberWhole(m, first);
          let all = a;
          // several requests in a row, each sending only what it appended
          for (const b of suffixes) {
            const spliced = completionBody(HEAD, m.splice(token, `${ws}${JSON.stringify(b)}${ws}`), TAIL);
            all = [...all, ...b];
            const body = bytesOf(spliced);
            expect(body.length).toBe(spliced.length);
            const messages = body.toString().slice(HEAD.length, -TAIL.length);
            expect(JSON.parse(messages)).toEqual(all);
            // the first request's bytes, unchanged, then the new messages
            expect(body.toString().startsWith(HEAD + first.slice(0, first.lastIndexOf("]")))).toBe(true);
            // and exactly what the whole array sent in one piece would have been
            expect(Buffer.compare(bytesOf(completionBody(HEAD, openOf(messages), TAIL)), body)).toBe(0);
            token = m.remember(spliced.held, token);
          }
        },
      ),
    );
  });

  it("grows an array in place: a long conversation's bytes are not copied again for each request", () => {
    const m = new MessagesMemory();
    const first = completionBody(HEAD, openOf(userMessages("x".repeat(10_000))), TAIL);
    let token = m.remember(first.held);
    for (let i = 0; i < 5; i++) {
      const next = completionBody(HEAD, m.splice(token, `[{"role":"user","content":"q${i}"}]`), TAIL);
      expect(next.held.arena).toBe(first.held.arena);
      token = m.remember(next.held, token);
    }
  });

  it("two requests extending one array do not write over each other", () => {
    const m = new MessagesMemory();
    const token = rememberWhole(m, userMessages("a"));
    const b = completionBody(HEAD, m.splice(token, '[{"role":"user","content":"b"}]'), TAIL);
    const c = completionBody(HEAD, m.splice(token, '[{"role":"user","content":"c"}]'), TAIL);
    const last = (x: CompletionBody) => JSON.parse(bytesOf(x).toString().slice(HEAD.length, -TAIL.length)).at(-1);
    expect(last(b).content).toBe("b");
    expect(last(c).content).toBe("c");
  });

  it("forgets the array a new one extends, and the oldest beyond its size", () => {
    const m = new MessagesMemory(2);
    const t1 = rememberWhole(m, userMessages("a"));
    const next = completionBody(HEAD, m.splice(t1, '[{"role":"user","content":"b"}]'), TAIL);
    const t2 = m.remember(next.held, t1);
    expect(m.size).toBe(1);
    expect(() => m.splice(t1, "[]")).toThrow(RpcError);
    rememberWhole(m, userMessages("x"));
    rememberWhole(m, userMessages("y"));
    expect(() => m.splice(t2, "[]")).toThrow(/send the whole array/);
  });

  it("refuses a suffix that is not a JSON array", () => {
    const m = new MessagesMemory();
    const t = rememberWhole(m, userMessages());
    for (const bad of ["", "{}", "[1,", '"x"']) {
      const err = (() => {
        try {
          m.splice(t, bad);
        } catch (e) {
          return e as RpcError;
        }
      })();
      expect(err?.status).toBe(Status.INVALID_ARGUMENT);
    }
  });
});

describe("prefix reuse through inferproxy", () => {
  let s: Stack;
  beforeEach(async () => {
    s = await startStack();
  });
  afterEach(async () => {
    await s?.close();
  });

  it("sends the server the same bytes as the whole array, and the cache still covers the earlier prompt", async () => {
    s.sim.enqueue({ content: "First answer." });
    const first = await collect(s.client, { slot: 1, messagesJson: userMessages("q1") });
    expect(first.final!.messagesToken).not.toBe("");
    const held = s.sim.slotTokens(1).length;
    const added = `${first.final!.messageJson},{"role":"user","content":"q2"}`;
    const whole = `${userMessages("q1").slice(0, -1)},${added}]`;

    s.sim.enqueue({ content: "Second answer." });
    const second = await collect(s.client, {
      slot: 1,
      messagesJson: `[${added}]`,
      afterMessagesToken: first.final!.messagesToken,
    });
    expect(second.error).toBeUndefined();
    const req = s.sim.completions.at(-1)!;
    expect(req.rawBody).toContain(`"messages":${whole}`);
    expect(req.cacheN).toBe(held);
    // The new array has a token of its own; the one it extended is gone.
    expect(second.final!.messagesToken).not.toBe(first.final!.messagesToken);
    const stale = await collect(s.client, {
      slot: 1,
      messagesJson: "[]",
      afterMessagesToken: first.final!.messagesToken,
    });
    expect(stale.error?.status).toBe(Status.FAILED_PRECONDITION);
  });

  it("refuses an unknown token before anything reaches the server", async () => {
    const before = s.sim.completions.length;
    const r = await collect(s.client, {
      slot: 0,
      messagesJson: '[{"role":"user","content":"more"}]',
      afterMessagesToken: "no-such-token",
    });
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    expect(r.error?.details.reason).toBe(ErrorReason.PREFIX_UNKNOWN);
    expect(r.error?.message).toContain("send the whole array");
    expect(s.sim.completions.length).toBe(before);
  });
});
