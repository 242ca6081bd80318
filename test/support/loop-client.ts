import { createClient, LoopService, SessionRole, type SessionEvent, type ClientOf } from "@boxmaker/common";

export type LoopClient = ClientOf<typeof LoopService>;

export const loopClient = (socket: string): LoopClient => createClient(LoopService, socket);

export async function newSession(c: LoopClient, title = "t", role = SessionRole.MAIN): Promise<string> {
  return (await c.createSession({ role, title })).id;
}

/**
 * Sends a message and collects the turn's events; `generating` resolves at the
 * first content event, when the turn demonstrably holds its slot and is
 * streaming — what a test that races a second client against it waits for.
 */
export function startTurn(
  c: LoopClient,
  sessionId: string,
  text: string,
): { generating: Promise<void>; events: Promise<SessionEvent[]> } {
  let generating!: () => void;
  const started = new Promise<void>((r) => {
    generating = r;
  });
  const events = (async () => {
    const out: SessionEvent[] = [];
    try {
      for await (const ev of c.send({ sessionId, text })) {
        out.push(ev);
        if (ev.event.case === "content") generating();
      }
    } finally {
      generating();
    }
    return out;
  })();
  return { generating: started, events };
}

/** Sends a message and collects the turn's events until it ends. */
export async function turn(c: LoopClient, sessionId: string, text: string): Promise<SessionEvent[]> {
  const out: SessionEvent[] = [];
  for await (const ev of c.send({ sessionId, text })) out.push(ev);
  return out;
}

export const doneOf = (events: SessionEvent[]) => {
  const last = events.at(-1)?.event;
  if (last?.case !== "turnDone")
    throw new Error(`turn did not finish: ${JSON.stringify(last, (_, v) => (typeof v === "bigint" ? String(v) : v))}`);
  return last.value;
};
