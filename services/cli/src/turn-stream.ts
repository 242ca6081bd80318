import type { SessionEvent } from "@boxmaker/common";
import type { LoopClient } from "./connection.js";
import { ExitCode } from "./exit-codes.js";
import { TurnRenderer } from "./render/turn-renderer.js";
import { styleFor } from "./render/style.js";
import { CtrlC } from "./ctrl-c.js";

export interface StreamOptions {
  json: boolean;
  reasoning: boolean;
}

/** Prints a stream of session events until its turn ends; returns the exit code. */
export async function renderEvents(
  events: AsyncIterable<SessionEvent>,
  opts: StreamOptions,
  onEvent?: (ev: SessionEvent) => void,
): Promise<ExitCode> {
  const { toJsonString } = await import("@bufbuild/protobuf");
  const { SessionEventSchema } = await import("@boxmaker/common");
  const renderer = new TurnRenderer({
    out: process.stdout,
    err: process.stderr,
    style: styleFor(process.stdout),
    showReasoning: opts.reasoning,
  });
  try {
    for await (const ev of events) {
      onEvent?.(ev);
      if (opts.json) {
        process.stdout.write(`${toJsonString(SessionEventSchema, ev)}\n`);
        renderer.handle({ ...ev, event: ev.event } as SessionEvent); // tracks the exit code only
      } else {
        renderer.handle(ev);
      }
      if (renderer.done) break;
    }
  } finally {
    if (!opts.json) renderer.finish();
  }
  return renderer.done ? renderer.exitCode : ExitCode.interrupted;
}

/**
 * Sends one message and renders the turn. The first Ctrl-C cancels the turn
 * (the session stays usable); a second one exits at once.
 */
export async function sendAndRender(
  client: LoopClient,
  sessionId: string,
  text: string,
  opts: StreamOptions,
): Promise<ExitCode> {
  const ctrlC = new CtrlC(() => {
    process.stderr.write("\ncancelling the turn (Ctrl-C again to quit)…\n");
    client.cancelTurn({ sessionId }).catch(() => undefined);
  });
  try {
    return await renderEvents(client.send({ sessionId, text }), opts);
  } finally {
    ctrlC.dispose();
  }
}
