import { afterEach, beforeEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expandCommand, findCommands, parseCommandFile, splitArgs } from "../src/custom-commands.js";

let dir: string;
let env: NodeJS.ProcessEnv;
let ws: string;
const SECRET = "AKIA-the-operator-secret";

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "bx-cmds-"));
  env = { XDG_CONFIG_HOME: join(dir, "config"), HOME: join(dir, "home") };
  ws = join(dir, "ws");
  mkdirSync(join(dir, "config", "boxmaker", "commands"), { recursive: true });
  mkdirSync(join(ws, ".boxmaker", "commands"), { recursive: true });
  writeFileSync(join(dir, "secret"), SECRET);
  mkdirSync(join(dir, "elsewhere"));
  writeFileSync(join(dir, "elsewhere", "leak.md"), `send ${SECRET}`);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const op = (name: string, text: string) => writeFileSync(join(dir, "config", "boxmaker", "commands", name), text);
const wsFile = (name: string, text: string) => writeFileSync(join(ws, ".boxmaker", "commands", name), text);

describe("finding custom commands", () => {
  it("reads the operator's and the workspace's, with origin, front matter and the operator winning a name", () => {
    op("review.md", "---\ndescription: review a file\narguments: [file, focus]\n---\nReview $file for $focus.\n");
    wsFile("review.md", "the workspace's review, which must not replace the operator's");
    wsFile("fix-it.md", "Fix $ARGUMENTS now.\nmore");
    const set = findCommands([ws], env);
    expect(set.commands.map((c) => [c.name, c.origin, c.description, c.argNames])).toEqual([
      ["review", "operator", "review a file", ["file", "focus"]],
      ["fix-it", "workspace", "Fix $ARGUMENTS now.", []],
    ]);
    expect(set.skipped).toEqual([
      { file: join(ws, ".boxmaker", "commands", "review.md"), why: "/review is already defined by an earlier file" },
    ]);
  });

  it("never reads through a symlink in the workspace: a linked file, a linked commands dir, a linked .boxmaker", () => {
    symlinkSync(join(dir, "secret"), join(ws, ".boxmaker", "commands", "leak.md"));
    const set1 = findCommands([ws], env);
    expect(set1.commands).toEqual([]);
    expect(set1.skipped.map((k) => k.why)).toEqual(["a symlink (never followed)"]);

    for (const [link, target] of [
      [join(ws, ".boxmaker", "commands"), join(dir, "elsewhere")],
      [join(ws, ".boxmaker"), join(dir, "dotbox")],
    ] as const) {
      rmSync(join(ws, ".boxmaker"), { recursive: true, force: true });
      mkdirSync(join(dir, "dotbox", "commands"), { recursive: true });
      writeFileSync(join(dir, "dotbox", "commands", "leak.md"), `send ${SECRET}`);
      if (link.endsWith("commands")) mkdirSync(join(ws, ".boxmaker"));
      symlinkSync(target, link);
      const set = findCommands([ws], env);
      expect(set.commands).toEqual([]);
      expect(set.skipped[0]!.why).toMatch(/is not a plain directory/);
      expect(JSON.stringify(set)).not.toContain(SECRET);
      rmSync(join(dir, "dotbox"), { recursive: true, force: true });
    }
  });

  it("skips a FIFO without blocking, a file over 64 KiB, a directory, and names that are not plain", () => {
    execFileSync("mkfifo", [join(ws, ".boxmaker", "commands", "pipe.md")]);
    wsFile("big.md", "x".repeat(64 * 1024 + 1));
    mkdirSync(join(ws, ".boxmaker", "commands", "sub.md"));
    wsFile("Evil\u001b[2J.md", "x");
    wsFile("help.md", "take over /help");
    wsFile("ok.md", "fine");
    const set = findCommands([ws], env);
    expect(set.commands.map((c) => c.name)).toEqual(["ok"]);
    const why = Object.fromEntries(set.skipped.map((k) => [k.file.split("/").at(-1), k.why]));
    expect(why).toEqual({
      "Evil\u001b[2J.md": "its name is not lower-case letters, digits, - and _",
      "big.md": "65537 bytes, over the 65536-byte limit",
      "help.md": "/help is a built-in command",
      "pipe.md": "not a regular file",
      "sub.md": "not a regular file",
    });
  });

  it("a workspace without .boxmaker/commands, or no operator directory, is simply none", () => {
    rmSync(join(dir, "config"), { recursive: true });
    expect(findCommands([join(dir, "elsewhere")], env)).toEqual({ commands: [], skipped: [] });
  });
});

describe("expanding a command", () => {
  it("puts every argument where the file says, once, and never expands what an argument holds", () => {
    const arg = fc.string({ minLength: 1, maxLength: 12 }).filter((a) => !/[\s"']/.test(a));
    fc.assert(
      fc.property(fc.array(arg, { maxLength: 4 }), (args) => {
        const out = expandCommand({ body: "A=$1 B=$2 C=$3 D=$4 all=$ARGUMENTS named=$x", argNames: ["x"] }, args);
        const at = (i: number) => args[i] ?? "";
        expect(out).toBe(`A=${at(0)} B=${at(1)} C=${at(2)} D=${at(3)} all=${args.join(" ")} named=${at(0)}`.trim());
      }),
      { numRuns: 500 },
    );
  });

  it("appends the arguments to a command that does not place them; quotes group words", () => {
    expect(splitArgs(`src/a.ts "error handling" 'x y'`)).toEqual(["src/a.ts", "error handling", "x y"]);
    expect(expandCommand({ body: "Review the code.\n", argNames: [] }, ["a.ts"])).toBe("Review the code.\n\na.ts");
    expect(expandCommand({ body: "Review the code.\n", argNames: [] }, [])).toBe("Review the code.");
    expect(parseCommandFile("---\ndescription: 'quoted'\narguments: a, b\n---\nbody").argNames).toEqual(["a", "b"]);
  });
});
