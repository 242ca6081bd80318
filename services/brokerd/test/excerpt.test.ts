import { afterAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BlobStore, sha256 } from "../src/blobs.js";
import { excerpt } from "../src/excerpt.js";
import { ToolError } from "../src/errors.js";
import { tempDir } from "../../../test/support/tmp.js";

const t = tempDir("bxe-");
afterAll(() => t.cleanup());

describe("excerpts of large results", () => {
  it("keeps the head and the tail verbatim and marks the omitted line numbers", () => {
    const text = Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`).join("\n");
    const ex = excerpt(text, 400);
    expect(ex.kind).toBe("head-tail");
    expect(ex.text.startsWith("line 1\nline 2\n")).toBe(true);
    expect(ex.text.endsWith("line 999\nline 1000")).toBe(true);
    expect(ex.text).toMatch(/\[… lines \d+-\d+ omitted …\]/);
    expect(Buffer.byteLength(ex.text)).toBeLessThan(500);
  });

  it("prefers error lines with their context, plus the last lines", () => {
    const lines = Array.from({ length: 500 }, (_, i) => `ok ${i + 1}`);
    lines[200] = "src/a.ts(3,4): error TS2322: Type 'number' is not assignable";
    lines[499] = "Found 1 error.";
    const ex = excerpt(lines.join("\n"), 2000);
    expect(ex.kind).toBe("errors");
    expect(ex.text).toContain("ok 199\nok 200\nsrc/a.ts(3,4): error TS2322");
    expect(ex.text).toContain("ok 202\nok 203");
    expect(ex.text).toContain("Found 1 error.");
    expect(ex.text).not.toContain("ok 100\n");
  });
});

describe("blob store", () => {
  it("stores by sha256, once, and reads back by either reference form", () => {
    const blobs = new BlobStore(join(t.dir, "blobs"));
    const h = blobs.put("hello\n");
    expect(h).toBe(sha256("hello\n"));
    expect(blobs.put("hello\n")).toBe(h);
    expect(readFileSync(join(t.dir, "blobs", h.slice(0, 2), h), "utf8")).toBe("hello\n");
    expect(blobs.get(`blob:sha256:${h}`)).toBe("hello\n");
    expect(blobs.get(h)).toBe("hello\n");
    expect(() => blobs.get("blob:sha256:../../etc/passwd")).toThrow(ToolError);
    expect(() => blobs.get("0".repeat(64))).toThrow(/no blob/);
  });
});
