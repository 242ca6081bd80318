import { createInterface } from "node:readline/promises";
import { terminalText, writeText } from "./render/terminal-safe.js";

/**
 * One line typed at a question on the terminal (readline: editing, the
 * terminal's own echo). Resolves undefined on Ctrl-C (after `onCtrlC`),
 * Ctrl-D, a closed input or `signal` (the question was withdrawn). The
 * prompt is the question's last line: readline redraws that one only.
 */
export async function readLine(
  input: NodeJS.ReadableStream,
  err: NodeJS.WritableStream,
  prompt: string,
  signal: AbortSignal,
  onCtrlC: () => void = () => {},
): Promise<string | undefined> {
  if (signal.aborted) return undefined;
  const rl = createInterface({ input, output: err, terminal: true });
  try {
    return await new Promise<string | undefined>((resolve) => {
      rl.once("SIGINT", () => {
        writeText(err, "\n");
        onCtrlC();
        resolve(undefined);
      });
      rl.once("close", () => resolve(undefined));
      rl.question(terminalText(prompt), { signal }).then(resolve, () => resolve(undefined));
    });
  } finally {
    rl.close();
  }
}
