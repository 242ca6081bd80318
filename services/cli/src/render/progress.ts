import cliProgress from "cli-progress";
import type { Style } from "./style.js";
import { terminalText } from "./terminal-safe.js";

/**
 * A progress bar on stderr while the server processes a long prompt, fed by
 * its prompt_progress events. Only on a terminal; scripts get nothing here.
 */
export class ProgressLine {
  private bar: cliProgress.SingleBar | undefined;

  constructor(
    private readonly err: NodeJS.WriteStream,
    private readonly style: Style,
  ) {}

  update(processed: number, total: number, cached: number): void {
    if (!this.err.isTTY || total - cached < 2048) return; // short prompts finish before a bar helps
    if (!this.bar) {
      this.bar = new cliProgress.SingleBar(
        {
          stream: this.err,
          format: terminalText(`${this.style.dim("prompt")} {bar} {value}/{total} tokens ({cached} cached)`),
          clearOnComplete: true,
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(total, processed, { cached });
    } else {
      this.bar.update(processed, { cached });
    }
  }

  clear(): void {
    this.bar?.stop();
    this.bar = undefined;
  }
}
