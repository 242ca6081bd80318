import { ExitCode } from "./exit-codes.js";

/** First SIGINT runs `onFirst`; the second exits with the interrupted code. */
export class CtrlC {
  private count = 0;
  private readonly handler = () => {
    this.count++;
    if (this.count === 1) this.onFirst();
    else process.exit(128 + 2);
  };

  constructor(private readonly onFirst: () => void) {
    process.on("SIGINT", this.handler);
  }

  dispose(): void {
    process.off("SIGINT", this.handler);
  }

  static readonly exitCode = ExitCode.interrupted;
}
