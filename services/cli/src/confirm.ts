import { createInterface } from "node:readline/promises";
import { terminalText } from "./render/terminal-safe.js";

/** Asks a yes/no question on the terminal; anything but y/yes is no. */
export async function confirm(question: string): Promise<boolean> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => {
      // Ctrl-C or Ctrl-D at the question means no, not a crash.
      rl.once("SIGINT", () => resolve(""));
      rl.once("close", () => resolve(""));
      rl.question(terminalText(`${question} [y/N] `)).then(resolve, () => resolve(""));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
