import { closeSync, fstatSync, openSync, readSync } from "node:fs";
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

const HEADING = "# Project instructions";

/** The first instructions file at the workspace root, read once (a session start, a new epoch). */
export function readInstructions(cfg: InstructionsConfig): ProjectInstructions | undefined {
  if (!cfg.workspace) return undefined;
  for (const name of cfg.files) {
    const path = join(cfg.workspace, name);
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch {
      continue;
    }
    try {
      if (!fstatSync(fd).isFile()) continue;
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
