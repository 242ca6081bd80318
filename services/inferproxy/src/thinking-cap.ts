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
