import { eraseLine, writeText } from "../render/terminal-safe.js";

/** Where `up` reports a wait that takes a while: one line, however long the wait. */
export interface Progress {
  /** `state` is what the wait is about ("loading the model (503)"); `text` the line, with its counters. */
  show(state: string, text: string): void;
  /** The wait is over: `final`, if given, stays as its last line. */
  end(final?: string): void;
}

/**
 * On a terminal the line is redrawn in place (a model loads for minutes: a
 * screen of "still loading" lines helps nobody); in a pipe or a log a line is
 * written only when the state changes, so the file tells what happened and when.
 */
export class ProgressLine implements Progress {
  private drawn = false;
  private lastState: string | undefined;

  constructor(private readonly stream: NodeJS.WritableStream & { isTTY?: boolean }) {}

  show(state: string, text: string): void {
    if (this.stream.isTTY) {
      eraseLine(this.stream);
      writeText(this.stream, text);
      this.drawn = true;
      return;
    }
    if (state === this.lastState) return;
    this.lastState = state;
    writeText(this.stream, `${text}\n`);
  }

  end(final?: string): void {
    if (this.drawn) eraseLine(this.stream);
    this.drawn = false;
    this.lastState = undefined;
    if (final) writeText(this.stream, `${final}\n`);
  }
}
