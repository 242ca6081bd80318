import { createRequire } from "node:module";
import { DYNAMIC } from "./dynamic.js";
import { effectsOf } from "./program-effects.js";
import type { ProgramEffect } from "./program-effects-check.js";
import { parseOptions } from "./program-options.js";
import { WRAPPERS } from "./program-options-wrappers.js";

/**
 * What a shell command line will run, as far as a real parser can see
 * (mvdan/sh's bash parser). Policy rules match programs, not strings: every
 * simple command anywhere in the line (pipelines, lists, subshells, if/while/
 * case bodies, functions, command substitutions) is one entry, with wrappers
 * (`command`, `env`, `exec`, `nice`, `timeout`, `sudo`, `xargs`, `find -exec` …)
 * unwrapped by their option syntax (`program-options-wrappers.ts`), path-qualified names
 * reduced to their base name and backslash quoting removed. What the parser
 * cannot see through (eval, `sh -c "$x"`, a computed command name, `source`,
 * a wrapper option it does not know, parse errors) is listed in `opaque`; the
 * options that make a program write or run others are listed in `effects`.
 */
export interface CommandAnalysis {
  /** argv of every simple command; a word that is computed at run time is DYNAMIC. */
  commands: string[][];
  /** Why some of what runs is unknown; non-empty means the line is at least `ask`. */
  opaque: string[];
  /** Output redirections to anything but /dev/null or another descriptor. */
  writesFiles: boolean;
  /** Options that make a program write files or run programs (`sed -i`, `find -exec`, `git -c`). */
  effects: ProgramEffect[];
}

/**
 * The part of mvdan-sh (a GopherJS build with no types) this file uses, and
 * the fields it reads of the syntax nodes it looks at. `NodeType` tells nodes
 * apart; `is` turns that tag into a TypeScript type.
 */
interface MvdanSyntax {
  NewParser(...opts: unknown[]): { Parse(src: string, name: string): ShNode };
  Variant(lang: unknown): unknown;
  LangBash: unknown;
  LangPOSIX: unknown;
  Walk(node: ShNode, fn: (node: ShNode | null) => boolean): void;
  NodeType(node: ShNode): string;
}

type ShNode = object;
interface Pos {
  Offset(): number;
}
interface Word {
  Parts: ShNode[];
  Pos(): Pos;
}
interface ShNodes {
  Lit: { Value: string };
  SglQuoted: { Value: string; Dollar: boolean };
  DblQuoted: { Parts: ShNode[] };
  Stmt: { Redirs: Array<{ OpPos: Pos; Word: Word | null }> };
  CallExpr: { Args: Word[] };
}

const is = <K extends keyof ShNodes>(node: ShNode, type: K): node is ShNodes[K] => sh().NodeType(node) === type;

let syntax: MvdanSyntax | undefined;
function sh(): MvdanSyntax {
  syntax ??= (createRequire(import.meta.url)("mvdan-sh") as { syntax: MvdanSyntax }).syntax;
  return syntax;
}

const MAX_COMMAND_BYTES = 64 * 1024;
const MAX_NESTING = 8;

/** Removes shell backslash quoting from a literal: `\rm` is `rm`; inside double quotes only \$ \` \" \\ and newline. */
function unquote(raw: string, inDouble: boolean): string {
  let out = "";
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c !== "\\" || i === raw.length - 1) {
      out += c;
      continue;
    }
    const n = raw[i + 1]!;
    if (n === "\n") {
      i++;
      continue;
    }
    if (!inDouble || '$`"\\'.includes(n)) {
      out += n;
      i++;
    } else out += c;
  }
  return out;
}

/** A word's value when it is fully literal (quotes and escapes removed), else DYNAMIC. */
function wordValue(word: { Parts: ShNode[] }, inDouble = false): string {
  let out = "";
  for (const part of word.Parts) {
    if (is(part, "Lit")) out += unquote(part.Value, inDouble);
    else if (is(part, "SglQuoted")) {
      if (part.Dollar) return DYNAMIC; // $'…' escapes: not worth decoding, treat as unknown
      out += part.Value;
    } else if (is(part, "DblQuoted")) {
      const v = wordValue(part, true);
      if (v === DYNAMIC) return DYNAMIC;
      out += v;
    } else return DYNAMIC; // parameter/arith expansion, command/process substitution, globs with braces…
  }
  return out;
}

const base = (name: string) => (name.includes("/") ? name.slice(name.lastIndexOf("/") + 1) : name);

/** Programs that run their arguments as another command line (after their own options). */
const SHELLS = new Set(["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"]);
const OPAQUE = new Set(["eval", "source", ".", "trap", "coproc", "fc"]);

/**
 * Where the command a wrapper runs starts: an index, undefined when `argv` is no wrapper
 * (or runs nothing, like `command -v`), or the reason it cannot tell (an option computed at
 * run time or one the table does not know: it could take the next word as its value).
 */
function unwrap(argv: string[]): number | string | undefined {
  const name = argv[0]!;
  if (name === "!") return 1; // `time ! rm` in bash negates a pipeline that runs rm
  const syntax = WRAPPERS[name];
  if (!syntax) return undefined;
  if (name === "command" && /^-p?[vV]/.test(argv[1] ?? "")) return undefined; // lookup only
  const p = parseOptions(argv, syntax);
  if (p.unknown) return p.unknown;
  if (p.options.some((o) => o.name === "-S" || o.name === "--split-string") && name === "env")
    return "env -S splits a string into a command";
  let i = p.next;
  // `env - rm` is `env -i rm`; env and sudo take VAR=value words before the command.
  if (name === "env") while (argv[i] === "-") i++;
  if (name === "env" || name === "sudo")
    while (i < argv.length && argv[i] !== DYNAMIC && /^[A-Za-z_][A-Za-z0-9_]*=/.test(argv[i]!)) i++;
  return i + (syntax.operands ?? 0);
}

export function analyzeCommand(line: string): CommandAnalysis {
  const out: CommandAnalysis = { commands: [], opaque: [], writesFiles: false, effects: [] };
  if (Buffer.byteLength(line) > MAX_COMMAND_BYTES) {
    out.opaque.push(`the command line is longer than ${MAX_COMMAND_BYTES} bytes`);
    return out;
  }
  analyze(line, out, 0);
  // Both parses (bash and POSIX) see most commands: one entry per reason is enough.
  out.effects = [...new Map(out.effects.map((e) => [e.why, e])).values()];
  return out;
}

/**
 * Parses as bash and as POSIX sh and keeps what either sees: `/bin/sh` is dash
 * on some systems and bash on others, and a line can mean different things in
 * each (`((rm x))` is arithmetic in bash, two subshells running rm in dash).
 */
function analyze(line: string, out: CommandAnalysis, depth: number): void {
  if (depth > MAX_NESTING) {
    out.opaque.push("shells nested too deeply");
    return;
  }
  const s = sh();
  const files: ShNode[] = [];
  let error = "";
  for (const lang of [s.LangBash, s.LangPOSIX]) {
    try {
      files.push(s.NewParser(s.Variant(lang)).Parse(line, "cmd"));
    } catch (err) {
      // GopherJS throws Go errors as objects with an Error() method.
      const e = err as { Error?: () => string; message?: unknown };
      error ||= e.Error?.() ?? String(e.message ?? err);
    }
  }
  if (files.length === 0) {
    out.opaque.push(`the line does not parse as shell (${error})`);
    return;
  }
  for (const file of files) walkFile(file, line, out, depth);
}

function walkFile(file: ShNode, line: string, out: CommandAnalysis, depth: number): void {
  sh().Walk(file, (node) => {
    if (!node) return true;
    if (is(node, "Stmt")) {
      for (const r of node.Redirs) {
        const op = line.slice(r.OpPos.Offset(), r.Word ? r.Word.Pos().Offset() : r.OpPos.Offset() + 2).trim();
        if (op.startsWith("<") && !op.startsWith("<>")) continue;
        if (op.endsWith("&") || op === ">&" || op === "<&") continue;
        const target = r.Word ? wordValue(r.Word) : DYNAMIC;
        if (/^&?>/.test(op) || op.startsWith("<>") || /^\d*>/.test(op)) {
          if (target !== "/dev/null" && !/^\d+$|^-$/.test(target)) out.writesFiles = true;
        }
      }
      return true;
    }
    if (is(node, "CallExpr")) {
      const argv = node.Args.map((w) => wordValue(w));
      if (argv.length) addCommand(argv, out, depth);
    }
    // Every other node (declarations, let, tests, arithmetic included) is walked into.
    return true;
  });
}

function addCommand(argv: string[], out: CommandAnalysis, depth: number): void {
  for (let guard = 0; guard < 16 && argv.length; guard++) {
    if (argv[0] === DYNAMIC) {
      out.opaque.push("the command name is computed at run time");
      return;
    }
    argv = [base(argv[0]!), ...argv.slice(1)];
    out.commands.push(argv);
    out.effects.push(...effectsOf(argv));
    const name = argv[0]!;
    if (OPAQUE.has(name)) {
      out.opaque.push(`${name} runs code the policy cannot see`);
      return;
    }
    if (SHELLS.has(name)) {
      const c = argv.indexOf("-c");
      const rest = argv.slice(1);
      if (c > 0) {
        const script = argv[c + 1];
        if (script === undefined || script === DYNAMIC) {
          out.opaque.push(`${name} -c runs a computed script`);
          return;
        }
        analyze(script, out, depth + 1);
        return;
      }
      if (rest.some((a) => a === DYNAMIC || !a.startsWith("-"))) {
        out.opaque.push(`${name} runs a script file the policy cannot see`);
        return;
      }
      out.opaque.push(`${name} reads its script from input`);
      return;
    }
    if (name === "find") {
      for (let i = 1; i < argv.length; i++) {
        if (["-exec", "-execdir", "-ok", "-okdir"].includes(argv[i]!)) {
          let j = i + 1;
          while (j < argv.length && argv[j] !== ";" && argv[j] !== "+") j++;
          const inner = argv.slice(i + 1, j);
          if (inner.length) addCommand(inner, out, depth);
          i = j;
        }
      }
      return;
    }
    if (name === "flock") {
      // `flock FILE -c 'cmd'` runs cmd with sh -c.
      const p = parseOptions(argv, WRAPPERS.flock!);
      const c = argv[p.next + 1];
      if (!p.unknown && (c === "-c" || c === "--command")) {
        const script = argv[p.next + 2];
        if (script === undefined || script === DYNAMIC) out.opaque.push("flock -c runs a computed script");
        else analyze(script, out, depth + 1);
        return;
      }
    }
    const next = unwrap(argv);
    if (next === undefined) return;
    if (typeof next === "string") {
      out.opaque.push(`${name}: ${next}, so what it runs is unknown`);
      return;
    }
    if (next >= argv.length) return;
    argv = argv.slice(next);
  }
}
