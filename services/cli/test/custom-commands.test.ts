import { afterEach, beforeEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { join as shellJoin } from "shlex";
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

describe("front matter as YAML, arguments as a shell splits them", () => {
  it("reads what YAML allows there: a description with a colon or folded over lines, arguments as a list in either form", () => {
    expect(parseCommandFile('---\ndescription: "Review: the diff"\narguments: [file, focus]\n---\nbody')).toMatchObject(
      {
        description: "Review: the diff",
        argNames: ["file", "focus"],
        body: "body",
      },
    );
    expect(
      parseCommandFile("---\ndescription: >\n  Review the\n  change\narguments:\n  - file\n  - focus\n---\nbody"),
    ).toMatchObject({ description: "Review the change", argNames: ["file", "focus"] });
    expect(parseCommandFile("---\narguments: a b, c\n---\nFirst line.\n")).toMatchObject({
      description: "First line.",
      argNames: ["a", "b", "c"],
    });
  });

  it("skips a file whose front matter is not a map of text, with the reason, and caps anchors in a workspace's file", () => {
    const bomb = `---\na: &a [x, x, x, x, x, x, x, x]\n${Array.from({ length: 20 }, (_, i) => `b${i}: &b${i} [*${i ? `b${i - 1}` : "a"}, *${i ? `b${i - 1}` : "a"}]`).join("\n")}\ndescription: boom\n---\nbody`;
    wsFile("bad-yaml.md", "---\ndescription: [unclosed\n---\nbody");
    wsFile("not-a-map.md", "---\n- a\n- b\n---\nbody");
    wsFile("number.md", "---\ndescription: 12\n---\nbody");
    wsFile("dup.md", "---\ndescription: a\ndescription: b\n---\nbody");
    wsFile("bomb.md", bomb);
    wsFile("fine.md", "---\ndescription: fine\n---\nbody");
    const set = findCommands([ws], env);
    expect(set.commands.map((c) => c.name)).toEqual(["fine"]);
    const why = Object.fromEntries(set.skipped.map((k) => [k.file.split("/").at(-1), k.why]));
    expect(why["bad-yaml.md"]).toMatch(/^its front matter is not YAML \(/);
    expect(why["not-a-map.md"]).toBe("its front matter is not a map of keys");
    expect(why["number.md"]).toBe("its front matter's description is not text");
    expect(why["dup.md"]).toMatch(/^its front matter is not YAML \(/);
    expect(why["bomb.md"]).toMatch(/^its front matter is not YAML \(/);
  });

  it("splits arguments as a POSIX shell would, and prose with a lone apostrophe at its spaces", () => {
    expect(splitArgs(`a\\ b x"y z"w "it's" 'say "hi"'`)).toEqual(["a b", "xy zw", "it's", 'say "hi"']);
    expect(splitArgs("don't touch the tests")).toEqual(["don't", "touch", "the", "tests"]);
    // Whatever the arguments, quoted as a shell quotes them they come back one for one.
    fc.assert(
      fc.property(fc.array(fc.string({ minLength: 1, maxLength: 12 }), { maxLength: 6 }), (args) => {
        expect(splitArgs(shellJoin(args))).toEqual(args);
      }),
      { numRuns: 500 },
    );
  });
});
