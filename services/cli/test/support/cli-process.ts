import { spawn } from "node:child_process";
import { once } from "node:events";
import { cliArgv } from "../../../../test/support/stack.js";
import type { Stack } from "../../../../test/support/stack.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: an escape sequence is what these tests look for.
export const ANSI = /\x1b\[/;
export type JsonEvent = Record<string, any>;
export const events = (stdout: string): JsonEvent[] =>
  stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as JsonEvent);

/** A CLI process against `stack`, whose output can be watched while it runs. */
export function spawnCli(stack: Stack, args: string[]) {
  const proc = spawn(process.execPath, cliArgv(args), {
    env: { ...process.env, NO_COLOR: "1", BOXMAKER_SOCKET: stack.sockets.loopd },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  proc.stdout.on("data", (b: Buffer) => {
    stdout += b.toString();
  });
  const exited = once(proc, "exit").then(([code]) => code as number);
  return { proc, exited, stdout: () => stdout };
}

/** Waits for a state a running CLI process reaches (its output, a file), up to 15 s. */
export async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
