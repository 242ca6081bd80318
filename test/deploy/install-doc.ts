// The install section of docs/operations.md read as what it is, a script:
// its ```sh blocks in order, split into commands, and checked against what
// the commands touch (directories, copied files, units) and against deploy/.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { dirname, join, posix } from "node:path";
import { repoRoot } from "../support/stack.js";

export const INSTALL_HEADING = "## Install with systemd (Debian, Ubuntu, other Linux)";

export interface Block {
  /** 1-based line of the opening fence in the document. */
  line: number;
  lang: string;
  text: string;
}

/** The fenced blocks between `heading` and the next heading of any level (fences tracked, so `# comments` in code are not headings). */
export function sectionBlocks(markdown: string, heading: string): Block[] {
  const lines = markdown.split("\n");
  const start = lines.indexOf(heading);
  if (start < 0) throw new Error(`no heading ${JSON.stringify(heading)}`);
  const blocks: Block[] = [];
  let open: Block | undefined;
  for (let i = start + 1; i < lines.length; i++) {
    const l = lines[i]!;
    const fence = /^```(\S*)\s*$/.exec(l);
    if (open) {
      if (fence && fence[1] === "") {
        blocks.push(open);
        open = undefined;
      } else open.text += `${l}\n`;
    } else if (fence) open = { line: i + 1, lang: fence[1]!, text: "" };
    else if (/^#{1,6} /.test(l)) break;
  }
  if (open) throw new Error(`unclosed block at line ${open.line}`);
  return blocks;
}

/** Marks an unquoted `&&`, `||`, `;` or `|` among the words (a quoted one is a plain word). */
const OPERATOR = "\u0000";

/** Shell words of one line: quotes removed, `$VAR`/`${…}` kept as written; enough for the install commands. */
export function shellWords(line: string): string[] {
  const words: string[] = [];
  let cur: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    const op = /^(&&|\|\||;|\|)/.exec(line.slice(i))?.[0];
    if (op) {
      if (cur !== undefined) words.push(cur);
      cur = undefined;
      words.push(OPERATOR + op);
      i += op.length - 1;
    } else if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      if (end < 0) throw new Error(`unterminated quote: ${line}`);
      cur = (cur ?? "") + line.slice(i + 1, end);
      i = end;
    } else if (c === "#" && cur === undefined) break;
    else if (/\s/.test(c)) {
      if (cur !== undefined) words.push(cur);
      cur = undefined;
    } else cur = (cur ?? "") + c;
  }
  if (cur !== undefined) words.push(cur);
  return words;
}

export interface Command {
  block: number;
  line: string;
  /** The words without a leading `sudo`. */
  argv: string[];
}

/** Each block's commands in order; a line with `a && b` gives two. */
export function commands(blocks: readonly Block[]): Command[] {
  const out: Command[] = [];
  blocks.forEach((b, block) => {
    for (const line of b.text.split("\n")) {
      let argv: string[] = [];
      const flush = () => {
        if (argv.length) out.push({ block, line, argv: argv[0] === "sudo" ? argv.slice(1) : argv });
        argv = [];
      };
      for (const w of shellWords(line)) {
        if (w.startsWith(OPERATOR)) flush();
        else argv.push(w);
      }
      flush();
    }
  });
  return out;
}

/** Options of install(1) and cp(1) that take a value, so their value is not taken for a path. */
const OPTION_VALUES = new Set(["-m", "-g", "-o", "-t", "-S", "--mode", "--group", "--owner"]);

function operands(argv: readonly string[]): { flags: string[]; paths: string[] } {
  const flags: string[] = [];
  const paths: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith("-")) {
      flags.push(a);
      if (OPTION_VALUES.has(a)) i++;
    } else paths.push(a);
  }
  return { flags, paths };
}

/** Files in the repository a relative source names (`*` in the last component only, as the docs use it). */
function expandSource(cwd: string, src: string): string[] {
  const abs = posix.isAbsolute(src) ? src : posix.join(cwd, src);
  const rel = abs.startsWith("/opt/boxmaker/") ? abs.slice("/opt/boxmaker/".length) : undefined;
  if (rel === undefined) return [abs];
  if (!rel.includes("*")) return existsSync(join(repoRoot, rel)) ? [rel] : [];
  const dir = dirname(rel);
  const re = new RegExp(
    `^${posix
      .basename(rel)
      .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")}$`,
  );
  return existsSync(join(repoRoot, dir))
    ? readdirSync(join(repoRoot, dir))
        .filter((f) => re.test(f))
        .map((f) => posix.join(dir, f))
    : [];
}

export interface Installed {
  /** Repository file (relative to the checkout) -> where the docs put it. */
  copies: Map<string, string>;
  /** Every problem found, one line each; empty when the section is sound. */
  problems: string[];
  /** Unit names `systemctl` is asked about, in order. */
  unitsNamed: string[];
  /** The commands, for order checks. */
  commands: Command[];
}

/**
 * Walks the commands as sh would run them (one block at a time, each in a
 * fresh shell) and records what each copies where, and every problem: a
 * syntax error under `sh -n`, a copy into a directory nothing created, a
 * source that is not in the repository, an `&&`/`||` chain (sh -e does not
 * stop on its left side), bash-only brace expansion, a line continuation.
 */
export function checkInstall(blocks: readonly Block[]): Installed {
  const problems: string[] = [];
  const copies = new Map<string, string>();
  const unitsNamed: string[] = [];
  const created = new Set<string>();
  for (const b of blocks) {
    if (b.lang !== "sh")
      problems.push(
        `line ${b.line}: a \`\`\`${b.lang || "(no language)"} block; the install section holds only \`\`\`sh`,
      );
    const r = spawnSync("sh", ["-n"], { input: b.text, encoding: "utf8" });
    if (r.status !== 0) problems.push(`line ${b.line}: sh -n: ${r.stderr.trim()}`);
  }
  const cmds = commands(blocks);
  let cwd = "";
  let block = -1;
  for (const c of cmds) {
    if (c.block !== block) {
      block = c.block;
      cwd = ""; // each block may be pasted into a new shell
    }
    const where = `block at line ${blocks[c.block]!.line}: ${c.line.trim()}`;
    if (/&&|\|\|/.test(c.line)) problems.push(`${where}: && or || (sh -e does not stop on a failure to its left)`);
    if (/(^|[^$])\{[^}]*,[^}]*\}/.test(c.line)) problems.push(`${where}: brace expansion is bash, not sh`);
    if (c.line.trimEnd().endsWith("\\")) problems.push(`${where}: line continuation`);
    const [cmd] = c.argv;
    const { flags, paths } = operands(c.argv);
    if (cmd === "cd") cwd = paths[0] ?? "";
    else if ((cmd === "install" && flags.includes("-d")) || (cmd === "mkdir" && flags.some((f) => /^-\w*p/.test(f)))) {
      for (const p of paths) for (let d = p; d !== "/" && d !== "."; d = posix.dirname(d)) created.add(d);
    } else if (cmd === "install" || cmd === "cp" || cmd === "ln") {
      const dest = paths.at(-1) ?? "";
      const sources = paths.slice(0, -1);
      const toDir = dest.endsWith("/") || sources.length > 1 || created.has(dest.replace(/\/$/, ""));
      const dir = toDir ? dest.replace(/\/$/, "") : posix.dirname(dest);
      if (!created.has(dir)) problems.push(`${where}: copies into ${dir}, which no earlier command creates`);
      for (const src of sources) {
        if (!posix.isAbsolute(src) && !cwd)
          problems.push(`${where}: relative source ${src} without a cd in this block`);
        // A link may name what the build makes; a copy must name a file of the checkout.
        const files = cmd === "ln" ? [src] : expandSource(cwd, src);
        if (files.length === 0) problems.push(`${where}: ${src} is not in the repository`);
        for (const f of files) copies.set(f, toDir ? posix.join(dir, posix.basename(f)) : dest);
      }
    } else if (cmd === "systemctl") {
      for (const a of paths)
        if (/^boxmaker/.test(a)) unitsNamed.push(/\.(service|target)$/.test(a) ? a : `${a}.service`);
    }
  }
  return { copies, problems, unitsNamed, commands: cmds };
}
