import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { instructionsFileOf, readInstructions, withInstructions } from "../src/project-instructions.js";
import { systemMessageJson } from "../src/messages.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => tmp.cleanup());

describe("project instructions", () => {
  it("reads the first configured file at the workspace root and names it in the system prompt", () => {
    const cfg = { workspace: tmp.dir, files: ["BOXMAKER.md", "AGENTS.md"], max_bytes: 1000 };
    expect(readInstructions(cfg)).toBeUndefined();
    mkdirSync(join(tmp.dir, "BOXMAKER.md")); // a directory is not a file
    writeFileSync(join(tmp.dir, "AGENTS.md"), "Run npm test before you finish.\n\n");
    const ins = readInstructions(cfg)!;
    expect(ins).toEqual({ path: join(tmp.dir, "AGENTS.md"), text: "Run npm test before you finish." });
    const prompt = withInstructions("You are Boxmaker.", ins);
    expect(prompt).toBe(
      `You are Boxmaker.\n\n# Project instructions (from ${ins.path})\n\nRun npm test before you finish.`,
    );
    // Byte-stable: reading the same file again gives the same prompt.
    expect(withInstructions("You are Boxmaker.", readInstructions(cfg))).toBe(prompt);
    expect(instructionsFileOf(systemMessageJson(prompt))).toBe(ins.path);
    expect(instructionsFileOf(systemMessageJson("You are Boxmaker."))).toBe("");
    expect(withInstructions("base", undefined)).toBe("base");
    expect(readInstructions({ ...cfg, workspace: "" })).toBeUndefined();
  });

  it("cuts a long file at max_bytes and says so", () => {
    writeFileSync(join(tmp.dir, "AGENTS.md"), "x".repeat(50));
    expect(readInstructions({ workspace: tmp.dir, files: ["AGENTS.md"], max_bytes: 10 })!.text).toBe(
      `${"x".repeat(10)}\n[… cut at 10 bytes]`,
    );
  });
});
