import {
  ErrorReason,
  RpcError,
  SessionEventSchema,
  Status,
  type BudgetsSchema,
  type SessionEvent,
} from "@boxmaker/common/client";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LoopClient } from "./connection.js";
import { ExitCode } from "./exit-codes.js";
import { TurnRenderer } from "./render/turn-renderer.js";
import { TurnOutcome } from "./turn-outcome.js";
import { markdownWanted, styleFor } from "./render/style.js";
import { widthOf } from "./render/columns.js";
import { CtrlC } from "./ctrl-c.js";
import { jsonOf } from "./json.js";
import { printErr, writeJson } from "./render/terminal-safe.js";
import { LiveLine } from "./render/live-line.js";
import { REASONING_KEY, TurnKeys } from "./turn-keys.js";

export interface StreamOptions {
  json: boolean;
  reasoning: boolean;
  /** Keep going after a turn ends (attach --follow); the stream's end or Ctrl-C stops it. */
  untilStreamEnd?: boolean;
  /** Sees every event (in-place approval questions). */
  onEvent?: (ev: SessionEvent) => void;
  /** The renderer to use (one with a status line, one a key toggles); else a plain one. */
  renderer?: TurnRenderer;
}

/** The renderer of a stream nobody types into (`attach`): on a terminal, with the status line `run` has. */
function plainRenderer(reasoning: boolean): TurnRenderer {
  const live = LiveLine.wanted(process.stdout)
    ? new LiveLine(process.stdout, styleFor(process.stdout), { followsTurns: true })
    : undefined;
  return new TurnRenderer({
    out: process.stdout,
    err: process.stderr,
    style: styleFor(process.stdout),
    showReasoning: reasoning,
    width: widthOf(process.stdout),
    markdown: markdownWanted(process.stdout),
    ...(live ? { live } : {}),
  });
}

/** Prints a stream of session events until its turn ends; returns the exit code. */
export async function renderEvents(events: AsyncIterable<SessionEvent>, opts: StreamOptions): Promise<ExitCode> {
  const renderer = opts.json ? undefined : (opts.renderer ?? plainRenderer(opts.reasoning));
  let outcome = new TurnOutcome();
  // A stream that ends before its turn does was cut off (loopd went away).
  let exit: ExitCode = ExitCode.interrupted;
  try {
    for await (const ev of events) {
      if (opts.json) writeJson(process.stdout, `${jsonOf(SessionEventSchema, ev)}\n`);
      // Before rendering: a withdrawn question must end its line before the result prints.
      opts.onEvent?.(ev);
      if (!opts.json) renderer!.handle(ev);
      outcome.handle(ev);
      if (outcome.done) {
        exit = outcome.exitCode;
        if (!opts.untilStreamEnd) break;
        outcome = new TurnOutcome();
      }
      // Read no faster than the output is taken (a pipe to a slow reader): the stream's flow
      // control then holds loopd back, instead of this process holding the whole turn in memory.
      await drained(process.stdout);
      await drained(process.stderr);
    }
  } finally {
    renderer?.finish();
  }
  return exit;
}

/**
 * A session's events, carried on past loopd ending the stream for falling
 * behind. loopd ends a Send or Follow stream whose client reads too slowly
 * (a terminal scrolling a burst, a paused pipe) with RESOURCE_EXHAUSTED and
 * the seq to resume from; this follows again from the last event it passed
 * on, so the caller sees every event once, in order, and nothing about the
 * resume. Only what cannot be picked up is said: a gap where loopd no longer
 * holds the events (one line, then the stream goes on), or a stream ended
 * again before it delivered anything (the error).
 */
export async function* resumingEvents(
  first: AsyncIterable<SessionEvent>,
  followFrom: (afterSeq: bigint) => AsyncIterable<SessionEvent>,
): AsyncGenerator<SessionEvent> {
  let stream = first;
  let last: bigint | undefined;
  let barren = 0;
  let resumedAfter: bigint | undefined;
  for (;;) {
    let delivered = false;
    try {
      for await (const ev of stream) {
        if (last !== undefined && ev.seq <= last) continue; // already passed on
        if (resumedAfter !== undefined && ev.seq > resumedAfter + 1n) {
          printErr(
            `(events ${resumedAfter + 1n}–${ev.seq - 1n} of session ${ev.sessionId} are no longer held by loopd; ` +
              "`boxmaker show` has the turn as logged)\n",
          );
        }
        resumedAfter = undefined;
        delivered = true;
        last = ev.seq;
        yield ev;
      }
      return;
    } catch (err) {
      const from = resumeSeq(err);
      if (from === undefined) throw err;
      barren = delivered ? 0 : barren + 1;
      if (barren > MAX_BARREN_RESUMES) throw err;
      resumedAfter = last ?? from;
      stream = followFrom(resumedAfter);
    }
  }
}

/** Where loopd said a stream it ended for falling behind may be picked up, if that is how it ended. */
function resumeSeq(err: unknown): bigint | undefined {
  if (!(err instanceof RpcError) || err.status !== Status.RESOURCE_EXHAUSTED) return undefined;
  return err.details.reason === ErrorReason.FELL_BEHIND ? err.details.resumeAfterSeq : undefined;
}

/** Resumes in a row that brought nothing: the client cannot keep up at all, and says so. */
const MAX_BARREN_RESUMES = 3;

/** Resolves once `out` has written what it buffered (at once when nothing waits); a closed stream counts as drained. */
function drained(out: NodeJS.WriteStream): Promise<void> | undefined {
  if (!out.writableNeedDrain) return undefined;
  return new Promise((resolve) => {
    const done = () => {
      out.off("drain", done);
      out.off("close", done);
      out.off("error", done);
      resolve();
    };
    out.once("drain", done);
    out.once("close", done);
    out.once("error", done);
  });
}

export type BudgetsInit = MessageInitShape<typeof BudgetsSchema>;

/**
 * Sends one message and renders the turn. The first Ctrl-C cancels the turn
 * (the session stays usable); a second one exits at once.
 */
export async function sendAndRender(
  client: LoopClient,
  sessionId: string,
  text: string,
  opts: StreamOptions & { budgets?: BudgetsInit; askInPlace?: boolean; reasoningKey?: boolean; reach?: string },
): Promise<ExitCode> {
  let live: LiveLine | undefined;
  const ctrlC = new CtrlC(() => {
    if (renderer) renderer.pause();
    else live?.erase();
    printErr("\ncancelling the turn (Ctrl-C again to quit)…\n");
    client.cancelTurn({ sessionId }).catch(() => undefined);
  });
  // On a terminal a staged call is asked about right here (approve/reject elsewhere still work).
  let approvals: import("./in-place-approval.js").InPlaceApprovals | undefined;
  if (opts.askInPlace && !opts.json && process.stdin.isTTY) {
    const { InPlaceApprovals } = await import("./in-place-approval.js");
    const { approvalAlert } = await import("./approval-alert.js");
    approvals = new InPlaceApprovals(
      client,
      styleFor(process.stderr),
      process.stderr,
      process.stdin,
      approvalAlert(process.stderr),
      // Ctrl-C at the question is Ctrl-C: the turn is cancelled (its proposal withdrawn), a second one quits.
      () => ctrlC.press(),
      opts.reach ?? "",
    );
  }
  // An MCP server's question during a call: asked here on a terminal, else dismissed at once (nobody would answer).
  const { ServerQuestions } = await import("./server-questions.js");
  const questions = new ServerQuestions(
    client,
    styleFor(process.stderr),
    process.stderr,
    process.stdin,
    Boolean(opts.askInPlace && !opts.json && process.stdin.isTTY),
    () => {
      if (renderer) renderer.pause();
      else live?.erase();
    },
  );
  // On a terminal: a status line under the output (one that can be redrawn), and in chat a key
  // that shows or hides the reasoning.
  let renderer: TurnRenderer | undefined;
  let keys: import("./turn-keys.js").TurnKeys | undefined;
  const withKey = Boolean(!opts.json && opts.reasoningKey && process.stdin.isTTY && process.stdout.isTTY);
  if (!opts.json && LiveLine.wanted(process.stdout)) {
    live = new LiveLine(process.stdout, styleFor(process.stdout), {
      approvalsAskHere: approvals !== undefined,
      ...(withKey
        ? { thinkingHint: () => `${REASONING_KEY.name} ${renderer?.reasoningShown ? "hides" : "shows"} reasoning` }
        : {}),
    });
  }
  if (live || withKey) {
    renderer = new TurnRenderer({
      out: process.stdout,
      err: process.stderr,
      style: styleFor(process.stdout),
      showReasoning: opts.reasoning,
      width: widthOf(process.stdout),
      markdown: markdownWanted(process.stdout),
      ...(live ? { live } : {}),
      ...(withKey ? { reasoningKey: REASONING_KEY.name } : {}),
    });
  }
  if (renderer && withKey) {
    const r = renderer;
    keys = new TurnKeys(
      process.stdin,
      () => r.toggleReasoning(),
      () => ctrlC.press(),
      () => (approvals?.questionOpen ?? false) || questions.questionOpen,
    );
  }
  // Stopped by a supervisor or a closed terminal: the turn must not run on
  // without anyone waiting for it (it would hold the slot). Cancel it, then exit.
  const stopHandler = (sig: NodeJS.Signals) => {
    if (renderer) renderer.pause();
    else live?.erase();
    printErr(`\n${sig}: cancelling the turn…\n`);
    const exit = () => process.exit(ExitCode.interrupted);
    setTimeout(exit, STOP_CANCEL_TIMEOUT_MS).unref();
    client.cancelTurn({ sessionId }, { timeoutMs: STOP_CANCEL_TIMEOUT_MS }).then(exit, exit);
  };
  for (const sig of STOP_SIGNALS) process.on(sig, stopHandler);
  try {
    const events = resumingEvents(
      client.send({ sessionId, text, ...(opts.budgets ? { budgets: opts.budgets } : {}) }),
      (afterSeq) => client.follow({ sessionId, afterSeq }),
    );
    const code = await renderEvents(events, {
      ...opts,
      ...(renderer ? { renderer } : {}),
      onEvent: (ev) => {
        approvals?.handle(ev);
        questions.handle(ev);
        keys?.rearm();
      },
    });
    // The questions after the turn read whole lines: the terminal goes back to cooked mode first.
    keys?.dispose();
    keys = undefined;
    await approvals?.askAfterTurn();
    return code;
  } finally {
    keys?.dispose();
    live?.stop();
    approvals?.dispose();
    questions.dispose();
    ctrlC.dispose();
    for (const sig of STOP_SIGNALS) process.off(sig, stopHandler);
  }
}

/** Signals that stop `run` and `chat` after cancelling the running turn (SIGINT is Ctrl-C, see ctrl-c.ts). */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ["SIGTERM", "SIGHUP"];
const STOP_CANCEL_TIMEOUT_MS = 3000;
