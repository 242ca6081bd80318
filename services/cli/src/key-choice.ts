// One key, no Enter: the answer to a question with a few lettered choices
// (an approval), read from a terminal in raw mode. The same letter means the
// same thing at every question (docs/cli.md): y approves, n rejects, l leaves
// it for later, d shows the whole diff.

const CTRL_C = 0x03;
const CTRL_D = 0x04;

/** What a key press answered: one of the choices, Ctrl-C, or nothing (Ctrl-D, the terminal closed, withdrawn). */
export type KeyAnswer = { key: string } | { ctrlC: true } | undefined;

/**
 * Waits for one of `keys` (lower-case letters; the upper-case ones count the
 * same). Other keys are ignored — Enter too, so a `y⏎` typed by habit
 * answers with its `y` and the Enter never answers the next question. The
 * terminal's mode and flow are as they were afterwards.
 */
export function readKey(input: NodeJS.ReadStream, keys: string, signal?: AbortSignal): Promise<KeyAnswer> {
  if (signal?.aborted) return Promise.resolve(undefined);
  const wasRaw = input.isRaw;
  // Not yet read counts as paused too (readableFlowing null): left flowing, stdin would keep the process alive.
  const wasFlowing = input.readableFlowing === true;
  return new Promise<KeyAnswer>((resolve) => {
    const done = (answer: KeyAnswer) => {
      input.off("data", onData);
      input.off("end", onEnd);
      signal?.removeEventListener("abort", onAbort);
      if (input.isTTY && input.isRaw !== wasRaw) input.setRawMode(wasRaw);
      if (!wasFlowing) input.pause();
      resolve(answer);
    };
    const onData = (chunk: Buffer | string) => {
      const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
      for (const b of bytes) {
        const k = String.fromCharCode(b).toLowerCase();
        if (b === CTRL_C) done({ ctrlC: true });
        else if (b === CTRL_D) done(undefined);
        else if (keys.includes(k)) done({ key: k });
        else continue;
        return;
      }
    };
    const onEnd = () => done(undefined);
    const onAbort = () => done(undefined);
    input.on("data", onData);
    input.once("end", onEnd);
    signal?.addEventListener("abort", onAbort, { once: true });
    if (input.isTTY) input.setRawMode(true);
    input.resume();
  });
}
