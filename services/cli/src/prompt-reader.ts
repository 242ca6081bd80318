import { appendFileSync, mkdirSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import type { Style } from "./render/style.js";
import { printErr, terminalText } from "./render/terminal-safe.js";
import { endsChat } from "./slash-builtins.js";

/** Lines arriving within this window of each other are one paste, so one message. */
const PASTE_WINDOW_MS = 25;
/** The key that opens $EDITOR on the line typed so far (as Codex's Ctrl-G; free in readline). */
const EDITOR_KEY = { name: "g", label: "Ctrl-G" } as const;
/** A line holding only this opens and closes an explicit multi-line block. */
const BLOCK_FENCE = '"""';
const HISTORY_KEEP = 1000;

/** ~/.local/state/boxmaker/chat_history ($XDG_STATE_HOME respected); $BOXMAKER_CHAT_HISTORY overrides, "" turns it off. */
function historyFile(env: NodeJS.ProcessEnv = process.env): string {
  if (env.BOXMAKER_CHAT_HISTORY !== undefined) return env.BOXMAKER_CHAT_HISTORY;
  const state = env.XDG_STATE_HOME || join(env.HOME || homedir(), ".local", "state");
  return join(state, "boxmaker", "chat_history");
}

/** One JSON string per line (a multi-line message stays one entry); newest last. */
function loadHistory(file: string): string[] {
  if (!file) return [];
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const l of text.split("\n")) {
    if (!l) continue;
    try {
      const v = JSON.parse(l) as unknown;
      if (typeof v === "string") out.push(v);
    } catch {
      // A line another version wrote differently is skipped, not fatal.
    }
  }
  return out.slice(-HISTORY_KEEP);
}

function appendHistory(file: string, entry: string): void {
  if (!file) return;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    appendFileSync(file, `${JSON.stringify(entry)}\n`, { mode: 0o600 });
  } catch {
    // History is a convenience; a read-only home must not stop the chat.
  }
}

/**
 * The chat prompt on a terminal. A readline interface exists only while the
 * person is typing: closed, it hands the terminal back to cooked mode, so
 * Ctrl-C during a turn arrives as SIGINT and cancels the turn instead of
 * being swallowed by readline.
 *
 * A message may span lines: pasted text (lines arriving together) is one
 * message, and so is everything between two lines that hold only `"""`.
 */
export class PromptReader {
  /** Newest first, as readline wants it. */
  private readonly history: string[];

  constructor(
    private readonly style: Style,
    private readonly file = historyFile(),
    /** Said before the prompt mark (chat's permission mode), read each time the prompt is drawn. */
    private readonly label?: () => string,
  ) {
    this.history = loadHistory(file)
      .reverse()
      .map((h) => h.replace(/\n/g, " ⏎ "));
  }

  /** The next non-empty message; undefined at Ctrl-D, /exit, or Ctrl-C twice on an empty line. */
  async next(): Promise<string | undefined> {
    let warned = false;
    for (;;) {
      const r = await this.ask();
      if (r.kind === "eof") return undefined;
      if (r.kind === "edit") {
        const message = await this.edit(r.text);
        if (message === undefined) continue;
        this.history.unshift(message.replace(/\n/g, " ⏎ "));
        appendHistory(this.file, message);
        return message;
      }
      if (r.kind === "interrupt") {
        if (r.hadText) continue; // Ctrl-C abandons the line, as in a shell
        if (warned) return undefined;
        warned = true;
        printErr(this.style.dim("(Ctrl-C again, Ctrl-D or /exit to quit)\n"));
        continue;
      }
      const text = r.text.replace(/\s+$/, "");
      if (!text.trim()) continue;
      if (endsChat(text)) return undefined;
      // A recalled multi-line entry is shown with ⏎ marks; sending it sends the original lines.
      const message = text.includes(" ⏎ ") && !text.includes("\n") ? text.replace(/ ⏎ /g, "\n") : text;
      this.history.unshift(message.replace(/\n/g, " ⏎ "));
      appendHistory(this.file, message);
      return message;
    }
  }

  /** The editor on `initial` (the line typed so far); its saved text is the message, nothing when it was left empty. */
  private async edit(initial: string): Promise<string | undefined> {
    const { editPrompt, editorCommand } = await import("./editor-prompt.js");
    printErr(
      this.style.dim(`(editing in ${editorCommand()}; save and quit to send, leave it empty to send nothing)\n`),
    );
    try {
      const text = await editPrompt(initial ? `${initial}\n` : "");
      if (text === undefined) printErr(this.style.dim("(the message was empty: nothing was sent)\n"));
      else
        printErr(
          `${this.style.dim("sending:")} ${text.split("\n")[0]}${text.includes("\n") ? this.style.dim(` (+${text.split("\n").length - 1} lines)`) : ""}\n`,
        );
      return text;
    } catch (err) {
      printErr(`${this.style.yellow((err as Error).message)}\n`);
      return undefined;
    }
  }

  private ask(): Promise<
    | { kind: "text"; text: string }
    | { kind: "eof" }
    | { kind: "interrupt"; hadText: boolean }
    | { kind: "edit"; text: string }
  > {
    const rl = createInterface({
      input: process.stdin,
      output: process.stderr,
      terminal: true,
      history: [...this.history],
      historySize: HISTORY_KEEP,
    });
    return new Promise((resolve) => {
      let settled = false;
      const lines: string[] = [];
      let inBlock = false;
      let timer: NodeJS.Timeout | undefined;
      const onKey = (_: string | undefined, key: { ctrl?: boolean; name?: string } | undefined) => {
        if (!key?.ctrl || key.name !== EDITOR_KEY.name) return;
        // Readline is closed first: the editor gets a terminal in its own mode, with no reader beside it.
        printErr("\n");
        settle({ kind: "edit", text: [...lines, rl.line].filter((l) => l !== "").join("\n") });
      };
      const settle = (v: Parameters<typeof resolve>[0]) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        process.stdin.off("keypress", onKey);
        resolve(v);
        rl.close();
      };
      process.stdin.on("keypress", onKey);
      const finishPaste = () => {
        // Pasted text whose last line has no newline yet: wait for its Enter.
        if (rl.line.length > 0) return;
        settle({ kind: "text", text: lines.join("\n") });
      };
      rl.on("SIGINT", () => {
        printErr("\n");
        settle({ kind: "interrupt", hadText: rl.line.length > 0 || lines.length > 0 });
      });
      rl.on("close", () => {
        if (!settled) printErr("\n");
        settle({ kind: "eof" });
      });
      rl.on("line", (line) => {
        clearTimeout(timer);
        if (line.trim() === BLOCK_FENCE) {
          if (inBlock) return settle({ kind: "text", text: lines.join("\n") });
          if (lines.length === 0) {
            inBlock = true;
            rl.setPrompt(terminalText(this.style.dim("… ")));
            rl.prompt();
            return;
          }
        }
        lines.push(line);
        if (inBlock) {
          rl.prompt();
          return;
        }
        timer = setTimeout(finishPaste, PASTE_WINDOW_MS);
      });
      const label = this.label?.();
      const prompt = `${label ? this.style.dim(`${label} `) : ""}${this.style.bold(this.style.green("› "))}`;
      rl.setPrompt(terminalText(prompt));
      rl.prompt();
    });
  }
}
