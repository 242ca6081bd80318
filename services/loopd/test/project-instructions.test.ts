import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { linkSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { instructionsFileOf, readInstructions, withInstructions } from "../src/project-instructions.js";
import { systemMessageJson } from "../src/sessions/messages.js";
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

describe("project instructions planted by a hostile model", () => {
  const cfg = () => ({ workspace: tmp.dir, files: ["AGENTS.md"], max_bytes: 1000 });
  const read = () => {
    const refused: string[] = [];
    const ins = readInstructions(cfg(), (_p, reason) => refused.push(reason));
    return { ins, refused };
  };

  it("does not follow a symlink, to outside the workspace or to a secret inside it", () => {
    const outside = tempDir();
    try {
      writeFileSync(join(outside.dir, "secret.txt"), "TOKEN=outside");
      writeFileSync(join(tmp.dir, ".env"), "TOKEN=inside");
      for (const target of [join(outside.dir, "secret.txt"), "/proc/self/environ", ".env", "./.env"]) {
        rmSync(join(tmp.dir, "AGENTS.md"), { force: true });
        symlinkSync(target, join(tmp.dir, "AGENTS.md"));
        const { ins, refused } = read();
        expect(ins, target).toBeUndefined();
        expect(refused).toEqual(["it is a symlink, which is not followed"]);
      }
    } finally {
      outside.cleanup();
    }
  });

  it("never opens a FIFO, socket or device, so loopd cannot be held in open(2)", async () => {
    execFileSync("mkfifo", [join(tmp.dir, "AGENTS.md")]);
    // In a child process: if the read blocked, the child would hang and the exit code would never come.
    const script = `import { readInstructions } from ${JSON.stringify(new URL("../src/project-instructions.ts", import.meta.url).pathname)};
      const r = readInstructions({ workspace: ${JSON.stringify(tmp.dir)}, files: ["AGENTS.md"], max_bytes: 100 });
      process.stdout.write(String(r));`;
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      timeout: 20_000,
      encoding: "utf8",
    });
    expect(out).toBe("undefined");
    expect(read().refused).toEqual(["it is not a regular file"]);
    rmSync(join(tmp.dir, "AGENTS.md"));
    const sock = createServer();
    await new Promise<void>((ok) => sock.listen(join(tmp.dir, "AGENTS.md"), ok));
    try {
      expect(read()).toEqual({ ins: undefined, refused: ["it is not a regular file"] });
    } finally {
      sock.close();
    }
  });

  it("refuses a second name of a file (a hard link) and a parent reached through a symlink", () => {
    writeFileSync(join(tmp.dir, "notes.txt"), "hidden by its first name");
    linkSync(join(tmp.dir, "notes.txt"), join(tmp.dir, "AGENTS.md"));
    expect(read()).toEqual({ ins: undefined, refused: ["it has 2 hard links; only a file with one name is read"] });
    rmSync(join(tmp.dir, "AGENTS.md"));

    const outside = tempDir();
    try {
      mkdirSync(join(outside.dir, "docs"));
      writeFileSync(join(outside.dir, "docs", "AGENTS.md"), "outside");
      symlinkSync(join(outside.dir, "docs"), join(tmp.dir, "docs"));
      const { ins, refused } = (() => {
        const r: string[] = [];
        const i = readInstructions({ workspace: tmp.dir, files: ["docs/AGENTS.md"], max_bytes: 100 }, (_p, x) =>
          r.push(x),
        );
        return { ins: i, refused: r };
      })();
      expect(ins).toBeUndefined();
      expect(refused).toEqual(["it is reached through a symlink"]);
    } finally {
      outside.cleanup();
    }
  });

  it("reads a plain file again once the planted link is gone", () => {
    symlinkSync("/proc/self/environ", join(tmp.dir, "AGENTS.md"));
    expect(read().ins).toBeUndefined();
    rmSync(join(tmp.dir, "AGENTS.md"));
    writeFileSync(join(tmp.dir, "AGENTS.md"), "plain");
    expect(read()).toEqual({ ins: { path: join(tmp.dir, "AGENTS.md"), text: "plain" }, refused: [] });
  });
});
