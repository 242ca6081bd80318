import { createInterface } from "node:readline";
import type { Style } from "./render/style.js";

/**
 * The chat prompt on a terminal. A readline interface exists only while the
 * person is typing: closed, it hands the terminal back to cooked mode, so
 * Ctrl-C during a turn arrives as SIGINT and cancels the turn instead of
 * being swallowed by readline.
 */
export class PromptReader {
  private readonly history: string[] = [];

  constructor(private readonly style: Style) {}

  /** The next non-empty line; undefined at Ctrl-D, /exit, or Ctrl-C twice on an empty line. */
  async next(): Promise<string | undefined> {
    let warned = false;
    for (;;) {
      const r = await this.ask();
      if (r.kind === "eof") return undefined;
      if (r.kind === "interrupt") {
        if (r.hadText) continue; // Ctrl-C abandons the line, as in a shell
        if (warned) return undefined;
        warned = true;
        process.stderr.write(this.style.dim("(Ctrl-C again, Ctrl-D or /exit to quit)\n"));
        continue;
      }
      const line = r.line.trim();
      if (!line) continue;
      if (line === "/exit" || line === "/quit") return undefined;
      this.history.unshift(r.line);
      return r.line;
    }
  }

  private ask(): Promise<{ kind: "line"; line: string } | { kind: "eof" } | { kind: "interrupt"; hadText: boolean }> {
    const rl = createInterface({
      input: process.stdin,
      output: process.stderr,
      terminal: true,
      history: [...this.history],
      historySize: 1000,
    });
    return new Promise((resolve) => {
      let settled = false;
      const settle = (v: Parameters<typeof resolve>[0]) => {
        if (settled) return;
        settled = true;
        resolve(v);
        rl.close();
      };
      rl.on("SIGINT", () => {
        process.stderr.write("\n");
        settle({ kind: "interrupt", hadText: rl.line.length > 0 });
      });
      rl.on("close", () => {
        if (!settled) process.stderr.write("\n");
        settle({ kind: "eof" });
      });
      rl.question(this.style.bold(this.style.green("› ")), (line) => settle({ kind: "line", line }));
    });
  }
}
