import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ErrorReason, RpcError, Status } from "@boxmaker/common";
import { Compactor } from "../src/compaction/compaction.js";
import { SessionStore } from "../src/sessions/session-store.js";
import type { Session } from "../src/sessions/session.js";
import { systemMessageJson, userMessageJson } from "../src/sessions/messages.js";
import { fakeInfer, silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

/** Issue #36: a compaction whose own request is refused must not leave the session failing every turn. */
let tmp: ReturnType<typeof tempDir>;
let store: SessionStore;
let s: Session;

beforeEach(() => {
  tmp = tempDir();
  store = new SessionStore(tmp.dir, silentLog);
  s = store.create({
    role: "main",
    title: "t",
    parentId: "",
    slot: 0,
    systemJson: systemMessageJson("sys"),
    toolsJson: "[]",
  });
});
afterEach(() => {
  store.closeAll();
  tmp.cleanup();
});

const nCtx = 8192;
const status = async () => ({ slots: [{ id: 0, nCtx }], selfTest: undefined }) as never;
const seq = (n: number) => Array.from({ length: n }, (_, i) => String(i + 1)).join("\n");
const overflow = (n: number) =>
  new RpcError(Status.FAILED_PRECONDITION, `the prompt is ${n} tokens but slot 0 holds ${nCtx}`, {
    reason: ErrorReason.CONTEXT_OVERFLOW,
    nPromptTokens: n,
    nCtx,
  });

function digitHistory() {
  const e = () => s.state.epoch.epoch;
  s.append({ t: "message", epoch: e(), json: userMessageJson("count"), at: 1 });
  s.append({
    t: "message",
    epoch: e(),
    json: JSON.stringify({
      role: "assistant",
      content: null,
      tool_calls: [{ id: "c1", type: "function", function: { name: "run_command", arguments: "{}" } }],
    }),
    at: 1,
  });
  s.append({
    t: "message",
    epoch: e(),
    json: JSON.stringify({ role: "tool", tool_call_id: "c1", content: seq(3000) }),
    at: 1,
  });
  s.append({ t: "message", epoch: e(), json: JSON.stringify({ role: "assistant", content: "done" }), at: 1 });
  s.append({ t: "message", epoch: e(), json: userMessageJson("and now?"), at: 1 });
}

describe("a compaction request the server refuses", () => {
  it("is cut by the count the refusal carries and asked again", async () => {
    digitHistory();
    const infer = { ...fakeInfer([{ error: overflow(14_000) }, { content: "the numbers 1 to 3000" }]), status };
    const c = new Compactor(infer, silentLog, { threshold: 0.8, keep_recent_messages: 2 }, "sys", 512);
    const r = await c.recover(s, new AbortController().signal);
    expect(r).toMatchObject({ reason: "overflow", foldedMessages: 4 });
    expect(infer.requests).toHaveLength(2);
    const [first, second] = infer.requests.map((q) => q.messagesJson.length);
    // Cut to well under the share of the limit the refusal said it took.
    expect(second!).toBeLessThan(first! * 0.6);
    expect(infer.requests[1]!.messagesJson).toContain("[…]");
  });

  it("before a request, a compaction that fails lets the request go instead of failing the turn", async () => {
    digitHistory();
    // The slot is full by the server's last count: compaction is due, and its summary requests are all refused.
    s.recordAssistant(JSON.stringify({ role: "assistant", content: "it is" }), nCtx, true);
    s.append({ t: "message", epoch: 0, json: userMessageJson("more"), at: 1 });
    const infer = {
      ...fakeInfer([{ error: overflow(20_000) }, { error: overflow(20_000) }, { error: overflow(20_000) }]),
      status,
    };
    const c = new Compactor(infer, silentLog, { threshold: 0.8, keep_recent_messages: 2 }, "sys", 512);
    await expect(c.maybeCompact(s, new AbortController().signal)).resolves.toBeUndefined();
    expect(infer.requests).toHaveLength(3);
    expect(s.state.epoch.epoch).toBe(0);
  });
});
