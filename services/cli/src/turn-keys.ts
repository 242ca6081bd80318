/** Ctrl-T: shows or hides the reasoning while a turn streams in `chat` (free in chat: readline binds it only while typing). */
export const REASONING_KEY = { byte: 0x14, name: "Ctrl-T" } as const;
const CTRL_C = 0x03;

/**
 * The keys a person can press while a chat turn runs. The terminal is put in
 * raw mode for the turn so one key acts without Enter; raw mode also takes
 * Ctrl-C from the terminal driver, so it is handed on as the same press the
 * signal would have been. Anything else typed is kept and given back to the
 * prompt when the turn ends, as the terminal would have buffered it.
 * While a question about a staged call is open (`paused()`), its readline
 * reads the keys and this reads none.
 */
export class TurnKeys {
  private readonly kept: Buffer[] = [];
  private readonly onData = (chunk: Buffer | string) => {
    if (this.paused()) return;
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    let from = 0;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (b !== REASONING_KEY.byte && b !== CTRL_C) continue;
      if (i > from) this.kept.push(bytes.subarray(from, i));
      from = i + 1;
      if (b === CTRL_C) this.onCtrlC();
      else this.onReasoningKey();
    }
    if (from < bytes.length) this.kept.push(bytes.subarray(from));
  };

  constructor(
    private readonly input: NodeJS.ReadStream,
    private readonly onReasoningKey: () => void,
    private readonly onCtrlC: () => void,
    private readonly paused: () => boolean,
  ) {
    input.on("data", this.onData);
    this.rearm();
  }

  /** Raw mode again, and reading again, after a question's readline, closing, set the terminal back to cooked and paused stdin. */
  rearm(): void {
    if (this.paused()) return;
    if (!this.input.isRaw) this.input.setRawMode(true);
    if (this.input.isPaused()) this.input.resume();
  }

  dispose(): void {
    this.input.off("data", this.onData);
    if (this.input.isRaw) this.input.setRawMode(false);
    this.input.pause();
    if (this.kept.length) this.input.unshift(Buffer.concat(this.kept));
  }
}
