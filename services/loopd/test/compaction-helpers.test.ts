import { describe, expect, it } from "vitest";
import {
  clippedTranscript,
  estimateTokens,
  needsCompaction,
  quarterContextBytes,
  recentToKeep,
} from "../src/compaction/compaction-policy.js";
import {
  boundFolds,
  compactedSystemJson,
  foldBlock,
  foldCount,
  foldsOf,
  FOLD_HEADING,
} from "../src/compaction/folds.js";
import { lastAssistantIndex, type StoredMessage } from "../src/sessions/session-state.js";
import { systemMessageJson, toolMessageJson, userMessageJson } from "../src/sessions/messages.js";

const at = (json: string): StoredMessage => ({ epoch: 0, json, at: 0 });
const user = (c: string) => at(userMessageJson(c));
const answer = (c: string) => at(JSON.stringify({ role: "assistant", content: c }));
const callTool = (id: string) =>
  at(
    JSON.stringify({
      role: "assistant",
      content: null,
      tool_calls: [{ id, type: "function", function: { name: "list_dir", arguments: "{}" } }],
    }),
  );
const result = (id: string) => at(toolMessageJson(id, "ok"));

describe("token estimates", () => {
  it("count 3 bytes per token plus a fixed overhead per message, in UTF-8 bytes", () => {
    expect(estimateTokens("")).toBe(8);
    expect(estimateTokens("x".repeat(300))).toBe(108);
    // Three bytes each: one character, one token.
    expect(estimateTokens("✓".repeat(10))).toBe(18);
  });

  it("a quarter of the context is measured in bytes at the session's ratio", () => {
    expect(quarterContextBytes(8192, 3)).toBe(6144);
    expect(quarterContextBytes(1000, 4.4)).toBe(1100);
  });

  it("compaction is needed only past the threshold, counting room for the answer (at most a quarter of the context)", () => {
    const m = [at("x".repeat(300))]; // 108 tokens at the default ratio
    expect(needsCompaction(500, m, 100, 1000, 0.8)).toBe(false); // 500 + 108 + 100 = 708 ≤ 800
    expect(needsCompaction(600, m, 100, 1000, 0.8)).toBe(true); // 808 > 800
    // A max_tokens of 10 000 counts as a quarter of the context: 500 + 108 + 250 = 858 ≤ 900.
    expect(needsCompaction(500, m, 10_000, 1000, 0.9)).toBe(false);
  });

  it("never when the context size is unknown", () => {
    expect(needsCompaction(1e9, [], 100, 0, 0.5)).toBe(false);
  });

  it("use the session's own token counter when given one", () => {
    const m = [at("abcd")];
    expect(needsCompaction(0, m, 0, 100, 0.5, () => 60)).toBe(true);
    expect(needsCompaction(0, m, 0, 100, 0.5, () => 40)).toBe(false);
  });
});

describe("how much recent history to keep", () => {
  const history = [user("q1"), callTool("a"), result("a"), answer("a1"), user("q2"), answer("a2")];

  it("keeps the last messages, starting at a user message so no tool result loses its call", () => {
    expect(recentToKeep(history, 2)).toEqual(history.slice(4));
    // Three from the end would start at a1; it moves forward to the next user message.
    expect(recentToKeep(history, 3)).toEqual(history.slice(4));
    expect(recentToKeep(history, 5)).toEqual(history.slice(4));
    expect(recentToKeep(history, 6)).toEqual(history);
  });

  it("never cuts the running turn, however little is to be kept", () => {
    const running = [user("q1"), answer("a1"), user("q2"), callTool("b"), result("b")];
    expect(recentToKeep(running, 0)).toEqual(running.slice(2));
    expect(recentToKeep(running, 1)).toEqual(running.slice(2));
  });

  it("keeps nothing of a history without a user message when asked to keep nothing", () => {
    expect(recentToKeep([answer("x")], 0)).toEqual([]);
  });

  it("finds the model's latest answer", () => {
    expect(lastAssistantIndex(history)).toBe(5);
    expect(lastAssistantIndex([user("q")])).toBe(-1);
    expect(lastAssistantIndex([user("q"), callTool("c"), result("c")])).toBe(1);
  });
});

describe("the compacted system message", () => {
  it("carries the prompt and the folds under the heading, and gives the folds back verbatim", () => {
    const folds = `${foldBlock(1, 0, 4, "first", [])}\n\n${foldBlock(2, 1, 6, "second", ["blob:sha256:x"])}`;
    const json = compactedSystemJson("You are a test.", folds);
    expect(JSON.parse(json)).toEqual({ role: "system", content: `You are a test.\n\n${FOLD_HEADING}\n${folds}` });
    expect(foldsOf(json)).toBe(folds);
    expect(foldsOf(systemMessageJson("no folds here"))).toBe("");
    expect(foldsOf(JSON.stringify({ role: "system", content: [{ type: "text", text: "parts" }] }))).toBe("");
  });
});

describe("fold count", () => {
  it("counts fold headers, not their mentions", () => {
    expect(foldCount("")).toBe(0);
    const two = `${foldBlock(1, 0, 2, "see [Boxmaker fold 9: in text", [])}\n\n${foldBlock(2, 1, 2, "b", [])}`;
    expect(foldCount(two)).toBe(2);
    // The count survives bounding: a dropped summary keeps its header.
    expect(foldCount(boundFolds(two, 10))).toBe(2);
  });
});

describe("the transcript of folded turns", () => {
  it("clips each message to its share and stops at the budget", () => {
    const long = user("y".repeat(5000));
    const lines = clippedTranscript([user("hello"), long], 2000);
    expect(lines[0]).toBe("user: hello");
    expect(lines[1]!.length).toBeLessThan(1100);
    expect(lines[1]).toContain(" […] ");
    expect(clippedTranscript([user("a".repeat(300)), user("b".repeat(300))], 400)).toHaveLength(1);
  });

  it("names tool calls and sends unparseable arguments as the request would", () => {
    const cut = at(
      JSON.stringify({
        role: "assistant",
        content: "",
        tool_calls: [{ id: "c", type: "function", function: { name: "write_file", arguments: '{"pa' } }],
      }),
    );
    const [line] = clippedTranscript([cut], 10_000);
    expect(line).toMatch(/^assistant: {2}\[tool calls: .*write_file/);
    expect(line).toContain('"arguments":"{}"');
  });
});
