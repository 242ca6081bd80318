import type { FinalMessage } from "@boxmaker/common";
import type { TurnUsage } from "../sessions/session.js";

type Timings = FinalMessage["timings"];

/** The server's own figures for one turn's requests, added up as the responses arrive. */
export class TurnTally implements TurnUsage {
  cacheN = 0;
  promptN = 0;
  predictedN = 0;
  promptMs = 0;
  predictedMs = 0;

  add(t: Timings): void {
    this.cacheN += t?.cacheN ?? 0;
    this.promptN += t?.promptN ?? 0;
    this.predictedN += t?.predictedN ?? 0;
    this.promptMs += t?.promptMs ?? 0;
    this.predictedMs += t?.predictedMs ?? 0;
  }
}

/** What the slot holds after a response: every token the server read or wrote for it. */
export function contextAfter(t: Timings): number {
  return (t?.cacheN ?? 0) + (t?.promptN ?? 0) + (t?.predictedN ?? 0);
}

/** How many tokens the server counted for the prompt it just read (cached or not). */
export function promptTokensOf(t: Timings): number {
  return (t?.cacheN ?? 0) + (t?.promptN ?? 0);
}
