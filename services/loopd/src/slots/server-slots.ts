import { setTimeout as sleep } from "node:timers/promises";
import type { ClientOf, InferService, Logger } from "@boxmaker/common";
import type { SlotMapCheck } from "./slot-map.js";

type StatusClient = Pick<ClientOf<typeof InferService>, "status">;

/**
 * Follows the server's slot count through inferproxy's Status: once at start
 * (waited for, briefly, so a map the server cannot serve stops loopd before
 * it serves anyone) and then every `pollMs`, since a restarted llama-server
 * may come back with another --parallel and inferproxy's self-test reads it
 * again. Only a self-test that ran on the server answering now counts; while
 * the server is down the last count is kept.
 */
export class ServerSlots {
  private timer: NodeJS.Timeout | undefined;
  private lastRefusal = "";
  /** Told of each self-test seen (its time), so what depends on the server is measured again (baseline-prompt.ts). */
  onSelfTest: ((checkedAtUnixMs: number) => void) | undefined;

  constructor(
    private readonly infer: StatusClient,
    readonly check: SlotMapCheck,
    private readonly log: Logger,
    private readonly pollMs: number,
  ) {}

  /** Asks inferproxy once; whether it had a self-test's count. `quiet`: the caller reports a refusal itself. */
  async refresh(quiet = false): Promise<boolean> {
    let total = 0;
    try {
      const st = await this.infer.status({}, { timeoutMs: 2_000, waitForReady: false });
      if (st.selfTest?.ran) {
        total = st.selfTest.actualTotalSlots;
        this.onSelfTest?.(Number(st.selfTest.checkedAtUnixMs));
      }
    } catch {
      // inferproxy away (restarting): the count held stays, the next poll asks again.
      return false;
    }
    if (total < 1) return false;
    if (this.check.observe(total)) this.log.info({ server_slots: total, slots: this.check.map }, "slot map");
    const refusal = this.check.refusal();
    if (refusal !== this.lastRefusal) {
      if (quiet) {
        // Said by whoever asked (loopd's start: one line and exit 2).
      } else if (refusal) this.log.error(refusal);
      else this.log.info("the slot map fits the server again");
      this.lastRefusal = refusal;
    }
    return true;
  }

  /** At start: the server's count if inferproxy has one within `waitMs` (a server still loading has none yet). */
  async first(waitMs: number): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (!(await this.refresh(true)) && Date.now() < deadline) await sleep(200);
  }

  /** The count, asked for now when none is known yet (a session about to be pinned). */
  async known(): Promise<void> {
    if (this.check.serverSlots === 0) await this.refresh();
  }

  follow(): void {
    if (this.pollMs <= 0 || this.timer) return;
    this.timer = setInterval(() => void this.refresh(), this.pollMs).unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
