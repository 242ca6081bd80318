import type { SessionEvent } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { widthOf } from "./columns.js";
import { eraseLine, writeText } from "./terminal-safe.js";
import { activityLine, nextActivity, startActivity, type Activity } from "./turn-activity.js";

/** Redraws at most this often for events (tokens arrive far faster); the clock ticks once a second. */
const REDRAW_MS = 250;
const TICK_MS = 1000;

/**
 * The turn's status line on a terminal: one line under the output, redrawn
 * in place with a carriage return and erase-line. It is only ever drawn when
 * the output is at the start of a line, and erased before anything else is
 * written, so it never mixes with the answer or a tool frame. The turn's
 * renderer calls erase() before it writes and settle() after each event.
 */
export class LiveLine {
  private state: Activity;
  private drawn = false;
  private atLineStart = true;
  private lastDrawMs = 0;
  private pending: NodeJS.Timeout | undefined;
  private readonly tick: NodeJS.Timeout;
  private stopped = false;
  /** Between turns of a followed session: nothing to say. */
  private idle: boolean;

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly style: Style,
    private readonly opts: {
      /** Questions (a staged call, an MCP server's) are asked on this terminal: the line keeps out of their way. */
      approvalsAskHere?: boolean;
      /** Said at the end of the line while the model thinks (the key that shows the reasoning). */
      thinkingHint?: () => string | undefined;
      /**
       * Watching a session rather than running one turn (`attach`): the line is
       * drawn from each turn_started to that turn's end, and waits unseen between.
       */
      followsTurns?: boolean;
    } = {},
  ) {
    this.idle = Boolean(opts.followsTurns);
    this.state = startActivity(Date.now());
    this.tick = setInterval(() => this.draw(), TICK_MS);
    this.tick.unref();
  }

  /** A line only for a terminal that can redraw one: not a pipe, not TERM=dumb. */
  static wanted(out: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): boolean {
    return Boolean(out.isTTY) && env.TERM !== "dumb";
  }

  handle(ev: SessionEvent): void {
    const e = ev.event.case;
    if (e === "turnStarted" && this.opts.followsTurns) {
      this.idle = false;
      this.state = startActivity(Date.now());
    }
    this.state = nextActivity(this.state, ev, Date.now());
    if (e !== "turnDone" && e !== "turnFailed") return;
    if (!this.opts.followsTurns) {
      this.stop();
      return;
    }
    this.erase();
    this.idle = true;
  }

  /** Before any other write to the terminal. */
  erase(): void {
    if (!this.drawn) return;
    eraseLine(this.out);
    this.drawn = false;
  }

  /** After an event's output: the line comes back (soon, not at once: tokens arrive faster than a person reads). */
  settle(atLineStart: boolean): void {
    this.atLineStart = atLineStart;
    if (this.stopped || this.pending) return;
    const wait = Math.max(0, this.lastDrawMs + REDRAW_MS - Date.now());
    if (wait === 0 && !this.drawn) {
      this.draw();
      return;
    }
    this.pending = setTimeout(() => {
      this.pending = undefined;
      this.draw();
    }, wait || REDRAW_MS);
    this.pending.unref();
  }

  private draw(): void {
    if (this.stopped || this.idle || !this.atLineStart) return;
    const kind = this.state.phase.kind;
    const asking = this.opts.approvalsAskHere && (kind === "approval" || kind === "question");
    if (asking) {
      this.erase();
      return;
    }
    const now = Date.now();
    const hint = this.state.phase.kind === "thinking" ? this.opts.thinkingHint?.() : undefined;
    const text = activityLine(this.state, now, widthOf(this.out), hint);
    eraseLine(this.out);
    writeText(this.out, this.style.dim(text));
    this.drawn = true;
    this.lastDrawMs = now;
  }

  /** The turn is over (or the stream gone): the line is erased for good. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.tick);
    clearTimeout(this.pending);
    this.pending = undefined;
    this.erase();
  }
}
