import { describe, expect, it } from "vitest";
import { cutMiddle, fitRequest, messageText, promptLimit } from "../src/compaction/compaction-fit.js";

/** A Qwen-like count: every digit alone, words whole, newlines one each. */
const qwenish = (text: string) => (text.match(/\p{N}|\p{L}+|\n|[^\s\p{L}\p{N}]/gu) ?? []).length;
const seq = (n: number) => Array.from({ length: n }, (_, i) => String(i + 1)).join("\n");

describe("fitting a request to the server's count", () => {
  it("shrinks a digit-heavy text that bytes say fits until the count says so", async () => {
    const text = seq(20_000);
    const limit = 4_000;
    // Three bytes a token says this text is well under 40k tokens; it is over 100k.
    expect(Math.ceil(Buffer.byteLength(text) / 3)).toBeLessThan(40_000);
    expect(qwenish(text)).toBeGreaterThan(100_000);
    const counts: number[] = [];
    const fit = await fitRequest({
      build: (chars) => cutMiddle(text, chars),
      count: async (t) => {
        counts.push(qwenish(t));
        return counts.at(-1);
      },
      budget: text.length,
      limit,
      minBudget: 512,
    });
    expect(fit.tokens).toBeLessThanOrEqual(limit);
    expect(counts.length).toBeLessThanOrEqual(3);
    expect(fit.request.startsWith("1\n2\n3\n")).toBe(true);
    expect(fit.request.endsWith("19999\n20000")).toBe(true);
    expect(fit.request).toMatch(/\[… Boxmaker cut \d+ characters here to fit the context …\]/);
  });

  it("keeps what fits as it is, and what cannot be counted as built", async () => {
    const small = await fitRequest({
      build: (n) => "x".repeat(n),
      count: async (t) => t.length,
      budget: 100,
      limit: 200,
      minBudget: 10,
    });
    expect(small).toEqual({ request: "x".repeat(100), tokens: 100, budget: 100 });
    const blind = await fitRequest({
      build: (n) => n,
      count: async () => undefined,
      budget: 5_000,
      limit: 1,
      minBudget: 10,
    });
    expect(blind.request).toBe(5_000);
  });

  it("stops at the smallest budget with its count, for the caller to name what did not fit", async () => {
    const fit = await fitRequest({
      build: (n) => n,
      count: async () => 1_000,
      budget: 5_000,
      limit: 10,
      minBudget: 2_048,
    });
    expect(fit).toEqual({ request: 2_048, tokens: 1_000, budget: 2_048 });
  });

  it("leaves room for the answer and a margin", () => {
    expect(promptLimit(32_768, 4_096)).toBe(32_768 - 4_096 - 256);
    expect(promptLimit(1_000, 4_096)).toBe(0);
  });

  it("counts a message by its texts, not its JSON", () => {
    const json = JSON.stringify({ role: "assistant", content: "a\nb", tool_calls: [{ id: "1" }] });
    expect(messageText(json)).toBe('a\nb\n[{"id":"1"}]');
    expect(cutMiddle("abcdef", 10)).toBe("abcdef");
  });
});
