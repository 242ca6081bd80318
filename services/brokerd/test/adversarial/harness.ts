// Shared by the adversarial suite and test/bench/adversarial.bench.ts: the
// generators, the workspace they attack, and the oracle that counts escapes.
import fc from "fast-check";
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CallOutcome } from "../../src/call-outcome.js";

const OUTSIDE_MARK = "OUTSIDE-7c1e";
const SECRET_MARK = "SECRET-4b2d";

export interface Counts {
  inputs: number;
  escapes: number;
  crashes: number;
}
export const newCounts = (): Counts => ({ inputs: 0, escapes: 0, crashes: 0 });

/** A workspace with a symlink out, secrets in several spellings, and an outside dir with marked content. */
export function plantWorkspace({ ws, outside }: { ws: string; outside: string }): void {
  mkdirSync(join(ws, "d", "e"), { recursive: true });
  writeFileSync(join(ws, "d", "a.txt"), "inside a\n");
  writeFileSync(join(ws, "d", "e", "b.txt"), "inside b\n");
  for (const s of [".env", "KEY.PEM", "id_rsa", ".envrc", "credentials.json", "secrets.yaml", "kubeconfig"])
    writeFileSync(join(ws, s), `${SECRET_MARK}\n`);
  mkdirSync(join(ws, ".git"));
  writeFileSync(join(ws, ".git", "config"), `${SECRET_MARK}\n`);
  mkdirSync(join(ws, "node_modules", "p"), { recursive: true });
  writeFileSync(join(ws, "node_modules", "p", ".ENV"), `${SECRET_MARK}\n`);
  writeFileSync(join(outside, "o.txt"), `${OUTSIDE_MARK}\n`);
  symlinkSync(outside, join(ws, "out"));
  symlinkSync(join(ws, ".env"), join(ws, "innocent.txt"));
  symlinkSync(join(outside, "o.txt"), join(ws, "d", "o-link.txt"));
}

/** Path strings built from the pieces attacks are made of. */
export function pathArb(ws: string, outside: string): fc.Arbitrary<string> {
  const seg = fc.oneof(
    fc.constantFrom(
      "..",
      ".",
      "",
      "d",
      "e",
      "a.txt",
      "b.txt",
      "out",
      "o.txt",
      "o-link.txt",
      ".env",
      "KEY.PEM",
      "key.pem",
      "Id_Rsa",
      ".ENVRC",
      "innocent.txt",
      ".git",
      "config",
      "node_modules",
      "p",
      ".ENV",
      "credentials.json",
      "Secrets.YAML",
      "kubeconfig",
      "new.txt",
    ),
    fc.string({ maxLength: 6 }),
  );
  const rel = fc.array(seg, { minLength: 1, maxLength: 8 }).map((xs) => xs.join("/"));
  return fc.oneof(
    { weight: 6, arbitrary: rel },
    { weight: 1, arbitrary: rel.map((r) => `${ws}/${r}`) },
    { weight: 1, arbitrary: rel.map((r) => `${outside}/${r}`) },
    { weight: 1, arbitrary: rel.map((r) => `/${r}`) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        "a/".repeat(3000),
        `d/${"x".repeat(5000)}`,
        "d\u0000/a.txt",
        "~/.ssh/id_rsa",
        "d//e///b.txt",
      ),
    },
  );
}

/** Tool calls with arbitrary (often malformed) arguments, across the core tools. */
export function toolCallArb(ws: string, outside: string): fc.Arbitrary<{ name: string; args: unknown }> {
  const path = pathArb(ws, outside);
  const junk = fc.oneof(
    fc.string({ maxLength: 20 }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.string({ maxLength: 4 }), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), { maxKeys: 2 }),
  );
  const line = fc.integer({ min: -5, max: 1e12 });
  return fc.oneof(
    fc.record({
      name: fc.constant("read_file"),
      args: fc.record(
        { path, start_line: fc.option(line, { nil: undefined }), end_line: fc.option(line, { nil: undefined }) },
        { requiredKeys: ["path"] },
      ),
    }),
    fc.record({ name: fc.constant("list_dir"), args: fc.record({ path }, { requiredKeys: [] }) }),
    fc.record({ name: fc.constant("write_file"), args: fc.record({ path, content: fc.string({ maxLength: 30 }) }) }),
    fc.record({
      name: fc.constant("edit_file"),
      args: fc.record({ path, old_text: fc.constantFrom("inside", "", "x"), new_text: fc.string({ maxLength: 10 }) }),
    }),
    fc.record({
      name: fc.constant("search_files"),
      args: fc.record(
        {
          pattern: fc.oneof(
            fc.constantFrom("inside", ".", "SECRET", "OUTSIDE", "(a+)+$", "["),
            fc.string({ maxLength: 8 }),
          ),
          path: fc.option(path, { nil: undefined }),
          glob: fc.option(
            fc.oneof(fc.constantFrom("*", "**", "*.txt", "*a*a*a*a*a*b", "**/*.pem"), fc.string({ maxLength: 10 })),
            { nil: undefined },
          ),
        },
        { requiredKeys: ["pattern"] },
      ),
    }),
    fc.record({
      name: fc.constantFrom(
        "read_file",
        "list_dir",
        "write_file",
        "search_files",
        "run_command",
        "call_tool",
        "find_tool",
        "spawn_agent",
        "update_plan",
        "nope",
        "",
      ),
      args: fc.oneof(
        junk,
        fc.dictionary(
          fc.constantFrom("path", "pattern", "content", "command", "name", "arguments", "query", "x"),
          junk,
          { maxKeys: 3 },
        ),
      ),
    }),
  );
}

/** Whether a tool result shows something it never may. */
export function leaked(out: CallOutcome): boolean {
  return out.content.includes(OUTSIDE_MARK) || out.content.includes(SECRET_MARK);
}

/** Nothing may appear outside besides what was planted. */
export function outsideIntact(outside: string): boolean {
  const names = readdirSync(outside);
  return names.length === 1 && names[0] === "o.txt";
}

/** Shell lines that run `rm` somewhere, through every wrapper and construct the policy must see through. */
export function rmLineArb(): fc.Arbitrary<string> {
  const name = fc.constantFrom("rm", "\\rm", "/bin/rm", "/usr/bin/rm", "'rm'", '"rm"', "r\\m", "./../../bin/rm");
  const wrapper = fc.constantFrom(
    "",
    "command ",
    "env ",
    "env -i A=1 ",
    "exec ",
    "nice ",
    "nice -n 3 ",
    "timeout 5 ",
    "sudo ",
    "sudo -u x ",
    "nohup ",
    "time ",
    "xargs ",
    "xargs -n1 ",
    "stdbuf -o0 ",
    "setsid ",
  );
  const args = fc.constantFrom("", " -rf x", " x", ' "$f"', " $(ls)", " *");
  const plain = fc.tuple(fc.array(wrapper, { maxLength: 3 }), name, args).map(([ws, n, a]) => `${ws.join("")}${n}${a}`);
  const simple = fc.oneof(
    { weight: 5, arbitrary: plain },
    { weight: 1, arbitrary: plain.map((p) => `find . -name x -exec ${p} {} \\;`) },
  );
  const other = fc.constantFrom("true", "echo hi", "ls -la", "cat a", "make");
  const wrapIn = (inner: string, k: number) =>
    [
      inner,
      `{ ${inner}; }`,
      `(${inner})`,
      `if true; then ${inner}; fi`,
      `while false; do ${inner}; done`,
      `for f in a b; do ${inner}; done`,
      `case x in x) ${inner};; esac`,
      `f() { ${inner}; }; f`,
      `echo $( ${inner} )`,
      `sh -c '${inner.replace(/'/g, `'\\''`)}'`,
      `bash -c "${inner.replace(/["$`\\]/g, (c) => `\\${c}`)}"`,
      `! ${inner}`,
      `${inner} &`,
      `time ${inner}`,
    ][k % 14]!;
  return fc
    .tuple(
      simple,
      fc.array(fc.integer({ min: 0, max: 13 }), { maxLength: 2 }),
      other,
      fc.constantFrom(" && ", " || ", "; ", " | ", "\n"),
      fc.boolean(),
    )
    .map(([s, wraps, o, sep, before]) => {
      const inner = wraps.reduce((acc, k) => wrapIn(acc, k), s);
      return before ? `${o}${sep}${inner}` : `${inner}${sep}${o}`;
    });
}
