import { create } from "@bufbuild/protobuf";
import {
  ElicitationAction,
  ElicitationEventSchema,
  messageOf,
  type BrokerService,
  type ClientOf,
  type ElicitationEvent,
  type Logger,
} from "@boxmaker/common";
import type { Session } from "../sessions/session.js";

/**
 * Passes on what MCP servers ask the person during one tool call
 * (elicitation), from brokerd to the session's watchers, until `done` aborts
 * (the call has its result). `asking` is given a promise per open question
 * that settles when it ends: the turn's wall clock stops meanwhile, as it does
 * for an approval. The questions never enter the session log or the model's
 * prompt: they are between the server and the person.
 */
export type QuestionRelay = (
  s: Session,
  callId: string,
  done: AbortSignal,
  asking?: (ended: Promise<void>) => void,
) => void;

/**
 * Who is asked: a subagent's question goes to the sessions above it as well
 * (the person watches the session that spawned it); a scheduled session has
 * nobody, so its questions are answered cancel at once rather than holding
 * the turn for the whole wait.
 */
export function questionRelay(
  broker: Pick<ClientOf<typeof BrokerService>, "watchElicitations" | "answerElicitation">,
  log: Logger,
  sessionOf: (id: string) => Session | undefined,
): QuestionRelay {
  return (s, callId, done, asking) => {
    const watchers = [s];
    for (let p = sessionOf(s.state.parentId); p && watchers.length < 8; p = sessionOf(p.state.parentId))
      watchers.push(p);
    const root = watchers.at(-1)!;
    const publish = (value: ElicitationEvent) => {
      for (const w of watchers) w.events.publish({ case: "elicitation", value });
    };
    void (async () => {
      const open = new Map<string, () => void>();
      try {
        for await (const e of broker.watchElicitations({ sessionId: s.id, callId }, { signal: done })) {
          const ev = e.event;
          if (ev.case === "asked") {
            if (open.has(ev.value.id)) continue;
            if (root.state.role === "scheduled") {
              log.info(
                { session: s.id, server: ev.value.server },
                "an MCP server asked a scheduled session's person: answered cancel",
              );
              void broker
                .answerElicitation({ sessionId: s.id, id: ev.value.id, action: ElicitationAction.CANCEL })
                .catch(() => undefined);
            }
            open.set(ev.value.id, () => undefined);
            asking?.(new Promise<void>((end) => open.set(ev.value.id, end)));
          } else if (ev.case === "ended") {
            open.get(ev.value.id)?.();
            if (!open.delete(ev.value.id)) continue;
          } else continue;
          publish(e);
        }
      } catch (err) {
        if (!done.aborted)
          log.warn(
            { session: s.id, call: callId, err: messageOf(err) },
            "could not follow the MCP servers' questions for this call",
          );
      } finally {
        // The call has its result: a question still shown anywhere is over (brokerd has answered it cancel).
        for (const [id, end] of open) {
          end();
          publish(
            create(ElicitationEventSchema, {
              event: { case: "ended", value: { id, action: ElicitationAction.CANCEL, why: "call ended" } },
            }),
          );
        }
      }
    })();
  };
}
