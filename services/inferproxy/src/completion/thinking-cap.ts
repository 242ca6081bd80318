import type { CompletionEventInit } from "./completion-stream.js";

/**
 * Counts streamed reasoning tokens against a per-turn cap. llama-server streams
 * one reasoning delta per sampled token, so deltas are the count; there is no
 * cheaper exact source while the completion is running.
 */
export class ThinkingCap {
  private count = 0;
  private firedAt = 0;

  /** `cap` 0 means no cap. */
  constructor(readonly cap: number) {}

  get tokens(): number {
    return this.count;
  }

  /** The reasoning-token count at which the cap fired; 0 before. */
  get firedAtTokens(): number {
    return this.firedAt;
  }

  get fired(): boolean {
    return this.firedAt > 0;
  }

  /** Records one reasoning delta; true exactly once, on the delta that reaches the cap. */
  onReasoningDelta(): boolean {
    this.count++;
    if (this.cap > 0 && this.firedAt === 0 && this.count >= this.cap) {
      this.firedAt = this.count;
      return true;
    }
    return false;
  }
}

/** The server's answer to `POST /v1/chat/completions/control`, reduced to what decides the turn. */
export interface ControlOutcome {
  accepted: boolean;
  message: string;
}

/** `{"success":true}` is the only acceptance; anything else is a refusal with the server's words. */
export function controlOutcome(status: number, body: unknown): ControlOutcome {
  const b = (body ?? {}) as { success?: unknown; message?: unknown; error?: { message?: unknown } };
  if (status === 200 && b.success === true) return { accepted: true, message: "" };
  const msg =
    typeof b.message === "string"
      ? b.message
      : typeof b.error?.message === "string"
        ? b.error.message
        : `HTTP ${status}`;
  return { accepted: false, message: msg };
}

/**
 * The thinking cap of one running completion: counts its reasoning deltas,
 * asks the server once to end the reasoning when the cap is reached, and
 * hands out the thinkingCap event exactly once, after the server answered.
 * The control call is injected, so the whole exchange runs without a server.
 */
export class ThinkingCapControl {
  private readonly count: ThinkingCap;
  private call: Promise<void> | undefined;
  private outcome: ControlOutcome | undefined;
  private reported = false;

  constructor(
    capTokens: number,
    /** `reasoning_end` for the running completion; never rejects (a failure is a refusal). */
    private readonly endReasoning: (completionId: string) => Promise<ControlOutcome>,
    /** The server would not end the reasoning: the caller aborts the completion. */
    private readonly onRefused: (outcome: ControlOutcome) => void,
  ) {
    this.count = new ThinkingCap(capTokens);
  }

  /** The reasoning-token count at which the cap fired; 0 before. */
  get firedAtTokens(): number {
    return this.count.firedAtTokens;
  }

  /** Counts reasoning deltas; true when they reached the cap (reasoning_end is then on its way). */
  onReasoningDeltas(n: number, completionId: string): boolean {
    let reached = false;
    for (let i = 0; i < n; i++) {
      if (!this.count.onReasoningDelta()) continue;
      reached = true;
      this.call = this.endReasoning(completionId).then((o) => {
        this.outcome = o;
        if (!o.accepted) this.onRefused(o);
      });
    }
    return reached;
  }

  /** Resolves when the server answers reasoning_end; undefined when no answer is awaited or it was reported. */
  get unreportedAnswer(): Promise<void> | undefined {
    return this.reported ? undefined : this.call;
  }

  /** Waits for the answer to a reasoning_end already sent, if any. */
  async settled(): Promise<void> {
    await this.call;
  }

  /** The thinkingCap event, once the server has answered; undefined before, and after it was taken. */
  takeEvent(completionId: string): CompletionEventInit | undefined {
    if (!this.outcome || this.reported) return undefined;
    this.reported = true;
    const { accepted, message } = this.outcome;
    return {
      event: { case: "thinkingCap", value: { reasoningTokens: this.firedAtTokens, completionId, accepted, message } },
    };
  }
}
