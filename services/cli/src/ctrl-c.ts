import { ExitCode } from "./exit-codes.js";

/**
 * First SIGINT runs `onFirst` (cancel the turn, stop following); the second
 * exits at once, for when the daemon is slow to honour the first.
 */
export class CtrlC {
  private count = 0;
  private readonly handler = () => {
    this.count++;
    if (this.count === 1) this.onFirst();
    else process.exit(ExitCode.interrupted);
  };

  constructor(private readonly onFirst: () => void) {
    process.on("SIGINT", this.handler);
  }

  /** A Ctrl-C that reached another reader first (a question's readline): counted as if it came here. */
  press(): void {
    this.handler();
  }

  get pressed(): boolean {
    return this.count > 0;
  }

  dispose(): void {
    process.off("SIGINT", this.handler);
  }
}
