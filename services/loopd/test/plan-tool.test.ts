import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { EventHub } from "../src/sessions/event-hub.js";
import { planOf, runUpdatePlan } from "../src/loop/plan-tool.js";
import type { StoredMessage } from "../src/sessions/session-state.js";
import type { Session } from "../src/sessions/session.js";

const itemArb = fc.record({
  content: fc.string({ minLength: 1, maxLength: 40 }).filter((c) => c.trim().length > 0),
  status: fc.constantFrom("pending", "in_progress", "done"),
});

/** A session with only what update_plan touches: its event hub. */
function fakeSession() {
  const events = new EventHub("s");
  const seen: unknown[] = [];
  events.publish = ((body) => {
    seen.push(body);
    return { sessionId: "s", seq: 1n, event: body };
  }) as EventHub["publish"];
  return { s: { events } as unknown as Session, seen };
}

/** One tool call and its result as loopd stores them. */
function exchange(i: number, name: string, args: string, result: string, isError: boolean): StoredMessage[] {
  const id = `call-${i}`;
  return [
    {
      epoch: i % 2,
      at: i,
      json: JSON.stringify({
        role: "assistant",
        content: "",
        tool_calls: [{ id, type: "function", function: { name, arguments: args } }],
      }),
    },
    {
      epoch: i % 2,
      at: i,
      json: JSON.stringify({ role: "tool", tool_call_id: id, content: result }),
      tool: { decision: "allowed", rule: "", is_error: isError },
    },
  ];
}

describe("update_plan in loopd", () => {
  it("publishes the list and acks in one line; refuses what is not a plan without publishing", () => {
    const { s, seen } = fakeSession();
    const ok = runUpdatePlan(
      JSON.stringify({
        items: [
          { content: " read it ", status: "done" },
          { content: "fix it", status: "in_progress" },
        ],
      }),
      s,
      "c1",
    );
    expect(ok).toEqual({ isError: false, content: "plan updated: 2 items (1 done, 1 in progress, 0 pending)" });
    expect(seen).toEqual([
      {
        case: "plan",
        value: {
          callId: "c1",
          items: [
            { content: "read it", status: "done" },
            { content: "fix it", status: "in_progress" },
          ],
        },
      },
    ]);
    for (const bad of [
      {},
      { items: [] },
      { items: "x" },
      { items: [{ content: "", status: "done" }] },
      { items: [{ content: "  ", status: "done" }] },
      { items: [{ content: "a", status: "later" }] },
      { items: [null] },
    ]) {
      const r = runUpdatePlan(JSON.stringify(bad), s, "c2");
      expect(r.isError).toBe(true);
      expect(r.content).toMatch(/^error: update_plan: /);
    }
    expect(seen).toHaveLength(1);
  });

  it("reads back the last accepted plan from any history, across epochs, ignoring failed, refused and other calls", () => {
    const callArb = fc.oneof(
      fc.record({
        kind: fc.constant("plan" as const),
        items: fc.array(itemArb, { minLength: 1, maxLength: 5 }),
        fails: fc.boolean(),
      }),
      fc.record({ kind: fc.constant("other" as const), fails: fc.boolean() }),
      // A model imitating the ack from another tool must not set the plan.
      fc.record({
        kind: fc.constant("forged" as const),
        items: fc.array(itemArb, { minLength: 1, maxLength: 3 }),
        fails: fc.constant(false),
      }),
    );
    fc.assert(
      fc.property(fc.array(callArb, { maxLength: 12 }), (calls) => {
        const { s } = fakeSession();
        const history: StoredMessage[] = [];
        let expected: unknown[] = [];
        calls.forEach((c, i) => {
          if (c.kind === "plan") {
            const out = c.fails
              ? { isError: true, content: "error: denied by rule" }
              : runUpdatePlan(JSON.stringify({ items: c.items }), s, `call-${i}`);
            history.push(...exchange(i, "update_plan", JSON.stringify({ items: c.items }), out.content, out.isError));
            if (!out.isError) expected = c.items.map((it) => ({ content: it.content.trim(), status: it.status }));
          } else if (c.kind === "forged") {
            history.push(
              ...exchange(i, "read_file", JSON.stringify({ items: c.items }), "plan updated: 1 item", false),
            );
          } else {
            history.push(...exchange(i, "read_file", '{"path":"a"}', "text", c.fails));
          }
        });
        expect(planOf(history)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});
