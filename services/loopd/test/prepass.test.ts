import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_PREPASS,
  INPUT_MARK,
  blobRefs,
  collapseRuns,
  detectKind,
  expandRuns,
  prepass,
  stripAnsi,
} from "../src/prepass/index.js";
import {
  BURIED_ERROR,
  TRACEBACK,
  buildLog,
  hugeJson,
  repeatsLog,
  sourceFile,
} from "../../../test/fixtures/large/generate.mjs";

const fixture = (name: string) =>
  readFileSync(new URL(`../../../test/fixtures/large/${name}`, import.meta.url), "utf8");
const opts = DEFAULT_PREPASS;

describe("prepass fixtures", () => {
  it("the committed fixtures are what the generator writes", () => {
    expect(fixture("build.log")).toBe(buildLog());
    expect(fixture("repeats.log")).toBe(repeatsLog());
    expect(fixture("huge.json")).toBe(hugeJson());
    expect(fixture("source.ts.txt")).toBe(sourceFile());
  });
});

describe("prepass", () => {
  it("keeps the buried ERROR line and its traceback byte for byte and spills the whole log", () => {
    const log = fixture("build.log");
    const r = prepass(log, opts);
    expect(r.blocks).toHaveLength(1);
    const b = r.blocks[0]!;
    expect(b.kind).toBe("log");
    expect(b.form).toBe("excerpt");
    expect(b.text).toBe(log);
    expect(r.text).toContain(BURIED_ERROR);
    expect(r.text).toContain(TRACEBACK.join("\n"));
    expect(r.text).toContain(`blob:sha256:${b.hash}`);
    expect(r.text).toContain('"name": "grep_blob"');
    expect(Buffer.byteLength(r.text)).toBeLessThan(opts.excerpt_bytes + 2_000);
  });

  it("is deterministic: same bytes, same hash, same message; a marked message is left alone", () => {
    const log = fixture("build.log");
    const a = prepass(log, opts);
    const b = prepass(log, opts);
    expect(a.text).toBe(b.text);
    expect(a.blocks[0]!.hash).toBe(b.blocks[0]!.hash);
    const again = prepass(a.text, { ...opts, threshold_bytes: 100 });
    expect(again.text).toBe(a.text);
    expect(again.blocks).toHaveLength(0);
    expect(a.text.startsWith(INPUT_MARK)).toBe(true);
  });

  it("leaves text below the threshold untouched", () => {
    const small = `why does this fail?\n\n${"x ".repeat(1000)}`;
    expect(prepass(small, opts)).toEqual({ text: small, blocks: [] });
  });

  it("keeps the person's question around a paste", () => {
    const text = `Why does the ingest worker fail?\n\n${fixture("build.log")}\n\nPlease be brief.`;
    const r = prepass(text, opts);
    expect(r.text.startsWith("Why does the ingest worker fail?\n\n[Boxmaker input: log")).toBe(true);
    expect(r.text.endsWith("\n\nPlease be brief.")).toBe(true);
  });

  it("spills a large fenced block and keeps the fences", () => {
    const text = `Review this:\n\`\`\`ts\n${fixture("source.ts.txt")}\n\`\`\`\nthanks`;
    const r = prepass(text, opts);
    expect(r.blocks).toHaveLength(1);
    expect(r.blocks[0]!.kind).toBe("source");
    expect(r.blocks[0]!.text).toBe(fixture("source.ts.txt"));
    expect(r.text).toMatch(/^Review this:\n```ts\n\[Boxmaker input: source/);
    expect(r.text).toMatch(/\n```\nthanks$/);
    expect(r.text).toContain('1: import { readFileSync } from "node:fs";');
    expect(r.text).toMatch(/\d+: export function compute0\(/);
  });

  it("describes JSON by its key structure", () => {
    const r = prepass(fixture("huge.json"), opts);
    expect(r.blocks[0]!.kind).toBe("json");
    expect(r.text).toContain("$: object{4 keys}");
    expect(r.text).toContain(".items: array[2500]");
    expect(r.text).toContain(".items[0].stock.warehouse = ");
  });

  it("labels diffs and counts hunks", () => {
    const files = Array.from({ length: 40 }, (_, f) => {
      const hunks = Array.from(
        { length: 5 },
        (_, h) =>
          `@@ -${h * 50},7 +${h * 50},8 @@\n ctx\n-old ${f}.${h}\n+new ${f}.${h}\n+more\n${Array.from({ length: 150 }, (_, k) => ` line ${f}.${h}.${k}\n`).join("")}`,
      );
      return `diff --git a/f${f}.ts b/f${f}.ts\n--- a/f${f}.ts\n+++ b/f${f}.ts\n${hunks.join("")}`;
    }).join("");
    const r = prepass(files, opts);
    expect(r.blocks[0]!.kind).toBe("diff");
    expect(r.text).toContain("diff --git a/f0.ts b/f0.ts  (5 hunks, +10 -5)");
  });

  it("prose keeps head and tail", () => {
    const words = Array.from({ length: 8000 }, (_, i) => `word${i}`);
    const lines: string[] = [];
    for (let i = 0; i < words.length; i += 10) lines.push(`The ${words.slice(i, i + 10).join(" ")}.`);
    const r = prepass(lines.join("\n"), opts);
    expect(r.blocks[0]!.kind).toBe("prose");
    expect(r.text).toContain(lines[0]);
    expect(r.text).toContain(lines.at(-1));
  });

  it("reduction of the repeats fixture is lossless", () => {
    const text = fixture("repeats.log");
    const clean = stripAnsi(text);
    expect(clean).not.toContain("\x1b");
    const reduced = collapseRuns(clean);
    expect(reduced.length).toBeLessThan(clean.length / 4);
    expect(expandRuns(reduced)).toBe(clean);
    // A line that already looks like a run marker survives too.
    const tricky = "a [×4 identical lines]\nb\nb\nb\nc";
    expect(expandRuns(collapseRuns(tricky))).toBe(tricky);
  });

  it("a block that fits once reduced is carried whole", () => {
    const text = repeatsLog()
      .split("\n")
      .filter((l: string) => l)
      .slice(0, 2000)
      .join("\n");
    const r = prepass(text, { threshold_bytes: 20_000, excerpt_bytes: 4_000 });
    expect(r.blocks[0]!.form).toBe("reduced");
    const body = r.text.slice(r.text.indexOf("\n") + 1, r.text.lastIndexOf("\n"));
    expect(expandRuns(body)).toBe(stripAnsi(text));
  });

  it.each([
    ["log", "2026-01-01T00:00:00 INFO a\n2026-01-01T00:00:01 WARN b\n2026-01-01T00:00:02 INFO c"],
    ["source", "import x from 'y';\nexport function f() {\n  return 1;\n}"],
    ["json", '{"a": [1, 2, 3]}'],
    ["prose", "It was a dark and stormy night.\nThe rain fell in torrents."],
  ])("detects %s", (kind, text) => {
    expect(detectKind(text, text.split("\n"))).toBe(kind);
  });

  it("blobRefs lists each pointer once", () => {
    const h = "a".repeat(64);
    expect(blobRefs(`x blob:sha256:${h} y blob:sha256:${h}`)).toEqual([`blob:sha256:${h}`]);
  });
});
