import { messageOf, type Logger } from "@boxmaker/common";
import type { ParkedStanding, Parking } from "./parking.js";
import type { SessionStore } from "../sessions/session-store.js";

/**
 * Reconciles the slot-save directory with the sessions once per start, in
 * the background: inferproxy may not answer yet (it starts beside loopd), so
 * a failed try is repeated, from 2 s doubling to 5 minutes, until one lists
 * the directory. Until then nothing is lost but disk: the files stay.
 */
export function reconcileParkedFiles(
  parking: Parking,
  store: SessionStore,
  log: Logger,
  delays = { firstMs: 2_000, maxMs: 300_000 },
): { stop(): void; done: Promise<void> } {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const done = (async () => {
    let wait = delays.firstMs;
    while (!ac.signal.aborted) {
      try {
        await parking.reconcile(standingNow(store), ac.signal);
        return;
      } catch (err) {
        if (ac.signal.aborted) return;
        log.warn({ err: messageOf(err), retry_ms: wait }, "could not reconcile parked slot files yet");
      }
      await new Promise<void>((resolve) => {
        timer = setTimeout(resolve, wait);
        ac.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      wait = Math.min(wait * 2, delays.maxMs);
    }
  })();
  return {
    stop() {
      clearTimeout(timer);
      ac.abort();
    },
    done,
  };
}

/** Each session's standing as the store has it when first asked (after the directory was listed). */
function standingNow(store: SessionStore): (id: string) => ParkedStanding {
  let known: Map<string, boolean> | undefined;
  return (id) => {
    known ??= new Map(store.summaries().map((e) => [e.summary.id, e.summary.archived]));
    const archived = known.get(id);
    return archived === undefined ? "gone" : archived ? "archived" : "live";
  };
}
