import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";

export interface InstructionsConfig {
  /** The workspace root whose instructions file is read; "" reads none. */
  workspace: string;
  /** File names tried in order at the workspace root (the first that exists wins). */
  files: string[];
  /** Longer files are cut here (and say so). */
  max_bytes: number;
}

export interface ProjectInstructions {
  path: string;
  text: string;
}

/** Why an instructions file that exists was not read, for the log and status. */
export type InstructionsRefusal = (path: string, reason: string) => void;

const HEADING = "# Project instructions";

/*
 * The workspace is written by the model (from sandboxed commands), so the file
 * read into every later session's system prompt is read the way brokerd's tools
 * read: nothing that is not a plain file the workspace itself holds. A symlink
 * (to /proc/self/environ, another session's log, the workspace's .env) is not
 * followed; a FIFO, socket or device is never opened for reading (O_NONBLOCK
 * also keeps a FIFO swapped in between the lstat and the open from blocking
 * loopd in open(2)); a hard link (a second name of a file the model could not
 * read by its first) is refused; and the descriptor's own path must be the
 * name asked for, so a parent directory swapped for a symlink is caught after
 * the open, on what was actually opened.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** The first instructions file at the workspace root, read once (a session start, a new epoch). */
export function readInstructions(
  cfg: InstructionsConfig,
  onRefused: InstructionsRefusal = () => undefined,
): ProjectInstructions | undefined {
  if (!cfg.workspace) return undefined;
  let root: string;
  try {
    root = realpathSync.native(cfg.workspace);
  } catch {
    return undefined;
  }
  for (const name of cfg.files) {
    const path = join(cfg.workspace, name);
    const expected = join(root, name);
    let pre: ReturnType<typeof lstatSync>;
    try {
      pre = lstatSync(expected);
    } catch {
      continue;
    }
    if (pre.isDirectory()) continue;
    if (!pre.isFile()) {
      onRefused(path, pre.isSymbolicLink() ? "it is a symlink, which is not followed" : "it is not a regular file");
      continue;
    }
    let fd: number;
    try {
      fd = openSync(expected, OPEN_FLAGS);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT") onRefused(path, `it cannot be opened safely (${code})`);
      continue;
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile()) {
        onRefused(path, "it is not a regular file");
        continue;
      }
      if (st.nlink > 1) {
        onRefused(path, `it has ${st.nlink} hard links; only a file with one name is read`);
        continue;
      }
      if (descriptorPath(fd) !== expected) {
        onRefused(path, "it is reached through a symlink");
        continue;
      }
      const buf = Buffer.alloc(cfg.max_bytes + 1);
      const n = readSync(fd, buf, 0, buf.length, 0);
      let text = buf
        .subarray(0, Math.min(n, cfg.max_bytes))
        .toString("utf8")
        .replace(/\uFFFD$/, "");
      if (n > cfg.max_bytes) text += `\n[… cut at ${cfg.max_bytes} bytes]`;
      return { path, text: text.replace(/\s+$/, "") };
    } finally {
      closeSync(fd);
    }
  }
  return undefined;
}

/** What the kernel says the descriptor is (Linux), "" where /proc is not mounted. */
function descriptorPath(fd: number): string {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return "";
  }
}

/** The system prompt with the project's instructions appended under a heading naming the file. */
export function withInstructions(systemPrompt: string, ins: ProjectInstructions | undefined): string {
  if (!ins) return systemPrompt;
  return `${systemPrompt}\n\n${HEADING} (from ${ins.path})\n\n${ins.text}`;
}

/** Which file an epoch's system message carries, "" when none. */
export function instructionsFileOf(systemJson: string): string {
  try {
    const content = (JSON.parse(systemJson) as { content?: unknown }).content;
    if (typeof content !== "string") return "";
    const m = /\n# Project instructions \(from (.+)\)\n/.exec(content);
    return m ? m[1]! : "";
  } catch {
    return "";
  }
}
