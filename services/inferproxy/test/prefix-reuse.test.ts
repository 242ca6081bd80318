// A caller that sends only the messages it appended (after_messages_token)
// must get exactly the request it would have got sending the whole array:
// the server's prompt cache depends on every earlier byte.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { RpcError, Status } from "@boxmaker/common";
import { MessagesMemory, openOf } from "../src/messages-memory.js";
import { collect, startStack, userMessages, type Stack } from "./support/stack.js";

describe("MessagesMemory", () => {
  it("splices any array onto any remembered one exactly as the whole array would read", () => {
    const msg = fc.record({ role: fc.constantFrom("user", "assistant", "tool"), content: fc.string() });
    fc.assert(
      fc.property(fc.array(msg, { minLength: 1 }), fc.array(msg), fc.constantFrom("", " ", "\n"), (a, b, ws) => {
        const m = new MessagesMemory();
        const first = JSON.stringify(a, null, ws ? 1 : undefined);
        const token = m.remember(openOf(first));
        const suffix = `${ws}${JSON.stringify(b)}${ws}`;
        const { messagesJson, open } = m.splice(token, suffix);
        expect(JSON.parse(messagesJson)).toEqual([...a, ...b]);
        expect(messagesJson.startsWith(first.slice(0, first.lastIndexOf("]")))).toBe(true);
        expect(`${open}]`).toBe(messagesJson);
      }),
    );
  });

  it("forgets the array a new one extends, and the oldest beyond its size", () => {
    const m = new MessagesMemory(2);
    const t1 = m.remember(openOf(userMessages("a")));
    const t2 = m.remember(m.splice(t1, '[{"role":"user","content":"b"}]').open, t1);
    expect(m.size).toBe(1);
    expect(() => m.splice(t1, "[]")).toThrow(RpcError);
    m.remember(openOf(userMessages("x")));
    m.remember(openOf(userMessages("y")));
    expect(() => m.splice(t2, "[]")).toThrow(/send the whole array/);
  });

  it("refuses a suffix that is not a JSON array", () => {
    const m = new MessagesMemory();
    const t = m.remember(openOf(userMessages()));
    for (const bad of ["", "{}", "[1,", '"x"']) {
      const err = (() => {
        try {
          m.splice(t, bad);
        } catch (e) {
          return e as RpcError;
        }
      })();
      expect(err?.code).toBe(Status.INVALID_ARGUMENT);
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
    expect(stale.error?.code).toBe(Status.FAILED_PRECONDITION);
  });

  it("refuses an unknown token before anything reaches the server", async () => {
    const before = s.sim.completions.length;
    const r = await collect(s.client, {
      slot: 0,
      messagesJson: '[{"role":"user","content":"more"}]',
      afterMessagesToken: "no-such-token",
    });
    expect(r.error?.code).toBe(Status.FAILED_PRECONDITION);
    expect(r.error?.details.reason).toBe("prefix_unknown");
    expect(r.error?.message).toContain("send the whole array");
    expect(s.sim.completions.length).toBe(before);
  });
});
