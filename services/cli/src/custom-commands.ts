import { closeSync, constants, fstatSync, openSync, readdirSync, readSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { split as shellSplit } from "shlex";
import { parse as parseYaml } from "yaml";
import { builtinSlashNames } from "./slash-builtins.js";

/**
 * Custom commands: Markdown prompt files used as `/name args` in chat and
 * `boxmaker run --command name args`. They come from the operator's own
 * directory and from each workspace root's .boxmaker/commands/. The model can
 * write a workspace's files, so a workspace command is only ever text that
 * becomes the user's message: nothing in it is run, it is named as coming
 * from the workspace wherever it is listed or used, it never shadows an
 * operator command or a built-in one, and it is read without following a
 * symlink anywhere below the root (a link to ~/.ssh would otherwise send
 * the operator's key to the model as a "prompt").
 */

export interface CustomCommand {
  name: string;
  description: string;
  /** Argument names from the front matter: `$name` stands for the argument at that position. */
  argNames: string[];
  body: string;
  origin: "operator" | "workspace";
  file: string;
}

/** What was found, and what was passed over with the reason (shown by `boxmaker commands`). */
export interface CommandSet {
  commands: CustomCommand[];
  skipped: { file: string; why: string }[];
}

/**
 * Chat's own slash commands: a file of the same name is not used. "hooks"
 * stays reserved as it was from the start, though chat has no /hooks yet: a
 * hooks.md must not change meaning the day it gets one.
 */
const BUILTIN_SLASH = [...builtinSlashNames(), "hooks"];

/** A prompt is a message, not a document: larger files are skipped rather than sent. */
const MAX_BYTES = 64 * 1024;
const MAX_FILES = 200;
const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** $XDG_CONFIG_HOME/boxmaker/commands, else ~/.config/boxmaker/commands. */
export function operatorCommandsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config"), "boxmaker", "commands");
}

const NOFOLLOW_DIR = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/**
 * Opens root/.boxmaker/commands one component at a time, refusing a symlink
 * at each (O_NOFOLLOW on a /proc/self/fd path, as brokerd's tools walk). The
 * root itself is the operator's configuration and is trusted.
 */
function openWorkspaceDir(root: string): number | undefined {
  let fd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
  for (const part of [".boxmaker", "commands"]) {
    try {
      const next = openSync(`/proc/self/fd/${fd}/${part}`, NOFOLLOW_DIR);
      closeSync(fd);
      fd = next;
    } catch (err) {
      closeSync(fd);
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new Error(`${join(root, ".boxmaker", "commands")}: ${part} is not a plain directory (${code(err)})`);
    }
  }
  return fd;
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code ?? String(err);

/** One file read through the directory's fd: no symlink, nothing but a regular file, at most MAX_BYTES. */
function readCommandFile(dirFd: number, name: string): string {
  // O_NONBLOCK: a FIFO planted in the directory must not hang the CLI on open.
  const fd = openSync(
    `/proc/self/fd/${dirFd}/${name}`,
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
  );
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error("not a regular file");
    if (st.size > MAX_BYTES) throw new Error(`${st.size} bytes, over the ${MAX_BYTES}-byte limit`);
    const buf = Buffer.alloc(MAX_BYTES + 1);
    let n = 0;
    for (let r = 1; r > 0 && n < buf.length; n += r) r = readSync(fd, buf, n, buf.length - n, null);
    if (n > MAX_BYTES) throw new Error(`over the ${MAX_BYTES}-byte limit`);
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/**
 * The front matter between `---` lines is YAML (the `yaml` library: what
 * Claude Code's and OpenCode's command files hold): `description:` a string,
 * `arguments:` a list of names or one string of names separated by spaces or
 * commas. A workspace's file is the model's to write: anchors are capped and
 * anything else that is not a plain map of those is a clear reason to skip
 * the file, not a guess.
 */
export function parseCommandFile(text: string): Pick<CustomCommand, "description" | "argNames" | "body"> {
  const m = /^---\r?\n([\s\S]*?)\r?\n?---\r?\n?/.exec(text);
  const body = m ? text.slice(m[0].length) : text;
  const front = m ? frontMatter(m[1]!) : {};
  const description = typeof front.description === "string" ? front.description.trim() : "";
  const args = front.arguments;
  const names = Array.isArray(args) ? args.map(String) : typeof args === "string" ? args.split(/[\s,]+/) : [];
  const argNames = names.map((a) => a.trim()).filter((a) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(a) && a !== "ARGUMENTS");
  // Without a description, the body's first line says what it is.
  return { description: description || (body.trim().split("\n")[0]?.slice(0, 80) ?? ""), argNames, body };
}

function frontMatter(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = parseYaml(text, { maxAliasCount: 16, uniqueKeys: true, prettyErrors: false });
  } catch (err) {
    throw new Error(`its front matter is not YAML (${String((err as Error).message).split("\n")[0]})`);
  }
  if (v === null || v === undefined) return {};
  if (typeof v !== "object" || Array.isArray(v)) throw new Error("its front matter is not a map of keys");
  const front = v as Record<string, unknown>;
  if (front.description !== undefined && typeof front.description !== "string")
    throw new Error("its front matter's description is not text");
  const a = front.arguments;
  if (
    a !== undefined &&
    a !== null &&
    typeof a !== "string" &&
    !(Array.isArray(a) && a.every((x) => typeof x === "string"))
  )
    throw new Error("its front matter's arguments are not a list of names");
  return front;
}

function scan(
  set: CommandSet,
  dirFd: number,
  dirPath: string,
  origin: CustomCommand["origin"],
  taken: Set<string>,
): void {
  let names: string[];
  try {
    names = readdirSync(`/proc/self/fd/${dirFd}`).sort();
  } catch (err) {
    set.skipped.push({ file: dirPath, why: `cannot be listed (${code(err)})` });
    return;
  }
  for (const file of names.filter((n) => n.endsWith(".md")).slice(0, MAX_FILES)) {
    const name = file.slice(0, -3);
    const path = join(dirPath, file);
    if (!NAME.test(name)) {
      set.skipped.push({ file: path, why: "its name is not lower-case letters, digits, - and _" });
      continue;
    }
    if (BUILTIN_SLASH.includes(name)) {
      set.skipped.push({ file: path, why: `/${name} is a built-in command` });
      continue;
    }
    if (taken.has(name)) {
      set.skipped.push({ file: path, why: `/${name} is already defined by an earlier file` });
      continue;
    }
    try {
      set.commands.push({ name, origin, file: path, ...parseCommandFile(readCommandFile(dirFd, file)) });
      taken.add(name);
    } catch (err) {
      const c = code(err);
      const why =
        c === "ELOOP" ? "a symlink (never followed)" : err instanceof Error && !("code" in err) ? err.message : c;
      set.skipped.push({ file: path, why });
    }
  }
}

/** Every command: the operator's first (they win a name), then each workspace root's in order. */
export function findCommands(workspaceRoots: readonly string[], env: NodeJS.ProcessEnv = process.env): CommandSet {
  const set: CommandSet = { commands: [], skipped: [] };
  const taken = new Set<string>();
  const opDir = operatorCommandsDir(env);
  let fd: number | undefined;
  try {
    fd = openSync(opDir, constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (err) {
    if (code(err) !== "ENOENT") set.skipped.push({ file: opDir, why: `cannot be opened (${code(err)})` });
  }
  if (fd !== undefined) {
    scan(set, fd, opDir, "operator", taken);
    closeSync(fd);
  }
  for (const root of workspaceRoots) {
    const dirPath = join(root, ".boxmaker", "commands");
    try {
      fd = openWorkspaceDir(root);
    } catch (err) {
      set.skipped.push({ file: dirPath, why: err instanceof Error ? err.message : String(err) });
      continue;
    }
    if (fd === undefined) continue;
    scan(set, fd, dirPath, "workspace", taken);
    closeSync(fd);
  }
  return set;
}

/**
 * Arguments as a POSIX shell splits them (shlex: quotes, backslashes, `a"b c"`
 * is one word), for grouping only: nothing is expanded or run. Prose with a
 * lone apostrophe (`/fix don't touch the tests`) is not a shell line; it is
 * split at spaces as typed.
 */
export function splitArgs(text: string): string[] {
  try {
    return shellSplit(text);
  } catch {
    return text.split(/\s+/).filter(Boolean);
  }
}

/**
 * The message a command with these arguments becomes: $ARGUMENTS is all of
 * them as typed, $1…$9 and the front matter's names one each (an argument
 * not given is empty). Substituted in one pass, so an argument holding
 * `$2` stays as it was typed.
 */
export function expandCommand(
  cmd: Pick<CustomCommand, "body" | "argNames">,
  args: readonly string[],
  rawArgs = args.join(" "),
): string {
  const named = new Map(cmd.argNames.map((n, i) => [n, i]));
  const body = cmd.body.replace(/\$(ARGUMENTS\b|[1-9]|[A-Za-z_][A-Za-z0-9_]*)/g, (whole, key: string) => {
    if (key === "ARGUMENTS") return rawArgs.trim();
    if (/^[1-9]$/.test(key)) return args[Number(key) - 1] ?? "";
    const i = named.get(key);
    return i === undefined ? whole : (args[i] ?? "");
  });
  // A command that never says where its arguments go gets them at the end, as Claude Code does.
  const placed = /\$(ARGUMENTS\b|[1-9])/.test(cmd.body) || cmd.argNames.some((n) => cmd.body.includes(`$${n}`));
  return (placed || !rawArgs.trim() ? body : `${body.replace(/\s+$/, "")}\n\n${rawArgs.trim()}`).trim();
}

/** Where a command comes from, as a person should read it before using it. */
export function originText(c: Pick<CustomCommand, "origin" | "file">): string {
  return c.origin === "operator" ? `operator (${c.file})` : `workspace (${c.file}; written in the workspace)`;
}
