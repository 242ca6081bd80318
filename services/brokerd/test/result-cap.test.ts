import { describe, expect, it } from "vitest";
import { capResult } from "../src/result-cap.js";

describe("result capping", () => {
  const stored: string[] = [];
  const store = (text: string) => {
    stored.push(text);
    return "ab".repeat(32);
  };

  it("leaves a result at or under the cap alone and stores nothing", () => {
    stored.length = 0;
    const text = "x".repeat(1000);
    expect(capResult(text, { tool: "t", capBytes: 1000, store })).toEqual({ text });
    expect(stored).toEqual([]);
  });

  it("never caps a tool that bounds its own results", () => {
    stored.length = 0;
    const text = "y".repeat(5000);
    expect(capResult(text, { tool: "read_blob", selfCapped: true, capBytes: 1000, store })).toEqual({ text });
    expect(stored).toEqual([]);
  });

  it("stores the whole result and returns an excerpt with the pointer and the calls that read it", () => {
    stored.length = 0;
    const text = Array.from({ length: 2000 }, (_, i) => `line ${i}`).join("\n");
    const capped = capResult(text, { tool: "run_command", capBytes: 2000, store });
    expect(stored).toEqual([text]);
    expect(capped.blob).toBe("ab".repeat(32));
    const ref = `blob:sha256:${"ab".repeat(32)}`;
    expect(capped.text).toMatch(new RegExp(`^\\[run_command result: ${Buffer.byteLength(text)} bytes, 2000 lines;`));
    expect(capped.text).toContain(`stored as ${ref}`);
    expect(capped.text).toContain(`call_tool({"name": "read_blob", "arguments": {"blob": "${ref}"`);
    expect(capped.text).toContain("line 0");
    expect(capped.text).toContain("line 1999");
    expect(Buffer.byteLength(capped.text)).toBeLessThan(Buffer.byteLength(text));
  });

  it("keeps a floor of excerpt even when the cap is tiny", () => {
    const capped = capResult("z".repeat(10_000), { tool: "t", capBytes: 10, store });
    expect(capped.blob).toBeDefined();
    expect(capped.text.split("\n").slice(1).join("\n").length).toBeGreaterThan(0);
  });
});
