import { describe, expect, it } from "vitest";
import { RpcError, Status } from "@boxmaker/common";
import { buildCompletionBody, completionInput, type CompletionInput } from "../src/completion/request-shaping.js";

const defaults = { sampling: { temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0 }, maxTokens: 4096, totalSlots: 3 };
// Odd but valid bytes a re-serialisation would change: spacing, escapes, number forms, key order.
const messages = '[ {"role":"system","content":"caf\\u00e9 1.0e0"},\n  {"content":"hi","role":"user"} ]';
const tools =
  '[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"number","default":1.50}}}}}]';
const input = (o: Partial<CompletionInput> = {}): CompletionInput => {
  const { messagesChecked, sampling, ...fields } = o;
  return completionInput(
    { slot: 1, messagesJson: messages, toolsJson: tools, ...fields },
    { ...(messagesChecked !== undefined ? { messagesChecked } : {}), ...(sampling ? { sampling } : {}) },
  );
};

function errOf(f: () => unknown): RpcError {
  try {
    f();
  } catch (e) {
    return e as RpcError;
  }
  throw new Error("no error");
}

describe("buildCompletionBody", () => {
  it("carries the contract's fields and splices messages and tools byte for byte", () => {
    const body = buildCompletionBody(input(), defaults);
    expect(body).toContain(`"messages":${messages}`);
    expect(body).toContain(`"tools":${tools}`);
    expect(JSON.parse(body)).toEqual({
      id_slot: 1,
      cache_prompt: true,
      stream: true,
      return_progress: true,
      max_tokens: 4096,
      temperature: 0.6,
      top_p: 0.95,
      top_k: 20,
      min_p: 0,
      messages: JSON.parse(messages),
      tools: JSON.parse(tools),
    });
  });

  it("asks for reasoning control only with a thinking cap; applies overrides; omits empty tools", () => {
    const b = JSON.parse(
      buildCompletionBody(
        input({ toolsJson: "", thinkingCapTokens: 100, maxTokens: 7, sampling: { temperature: 0.2 } }),
        defaults,
      ),
    );
    expect(b.reasoning_control).toBe(true);
    expect(b.max_tokens).toBe(7);
    expect(b.temperature).toBe(0.2);
    expect(b.top_p).toBe(0.95);
    expect("tools" in b).toBe(false);
    expect("reasoning_control" in JSON.parse(buildCompletionBody(input(), defaults))).toBe(false);
  });

  it.each([
    ["not JSON", { messagesJson: "[{" }, /messages_json is not valid JSON/],
    ["an object", { messagesJson: '{"role":"user"}' }, /messages_json must be a JSON array, got object/],
    ["empty", { messagesJson: "[]" }, /messages_json is an empty array/],
    ["tools not an array", { toolsJson: '{"type":"function"}' }, /tools_json must be a JSON array/],
    ["slot out of range", { slot: 3 }, /slot 3 does not exist: llama-server has slots 0\.\.2/],
    ["negative sampling", { sampling: { top_p: -1 } }, /sampling\.top_p/],
  ])("rejects %s with INVALID_ARGUMENT", (_n, o, msg) => {
    const e = errOf(() => buildCompletionBody(input(o as Partial<CompletionInput>), defaults));
    expect(e).toBeInstanceOf(RpcError);
    expect(e.status).toBe(Status.INVALID_ARGUMENT);
    expect(e.message).toMatch(msg);
  });
});
