import { createHash } from "node:crypto";
import type { Logger } from "@boxmaker/common";
import type { ContractConfig, ContractEntry } from "../config.js";
import type { RawResponse } from "./connection-check.js";
import { refusalMessage } from "./contract-refusal.js";
import { chooseContract } from "./contract-table.js";
import { ServerCheckError } from "../errors.js";
import type { LlamaClient } from "../upstream/llama-client.js";
import { evaluateProps, notRun, type Props, type SelfTestResult } from "./self-test.js";

export type ServerState = "ok" | "loading" | "down";

export interface HealthMonitorOptions {
  contract: ContractConfig;
  /** The contract table (config `contracts`): the entry for the served model is what it is held to. */
  contracts?: readonly ContractEntry[];
  pollMs: number;
  timeoutMs: number;
  log: Logger;
  /** Called after every self-test run: the first, and each time a different server (or process) answers. */
  onSelfTest?: (result: SelfTestResult) => void;
}

/** What makes two answers to `/props` the same server: the contract's facts, the model, and the process. */
function serverIdentity(p: Props & { media_marker?: unknown }): string {
  return createHash("sha256")
    .update(
      JSON.stringify([
        p.chat_template ?? null,
        p.default_generation_settings?.n_ctx ?? null,
        p.total_slots ?? null,
        p.model_path ?? null,
        p.build_info ?? null,
        // Random per llama-server process: a restart with the same model is still a new server.
        typeof p.media_marker === "string" ? p.media_marker : null,
      ]),
    )
    .digest("hex");
}

/**
 * Knows which llama-server answers and whether it matches the contract.
 *
 * The self-test follows the server, not the poll: every new connection to
 * llama-server is checked with `GET /props` before any request uses it
 * (LlamaClient's connection check calls `checkConnection`). A server that was
 * restarted, with the same model or another, can only be reached through a
 * new connection, so its first answer re-runs the self-test and a mismatch
 * refuses the connection — and with it every request that would have used it.
 * `/health` is polled so `status` notices a restart or an outage between turns.
 *
 * While the server stays healthy the poll stretches (doubling, up to
 * IDLE_POLL_MAX_MS): a stack left idle for days wakes every half minute, not
 * every two seconds, and on a virtual machine an idle daemon's wake-up costs
 * ten times what the check itself does. Nothing waits on the poll to notice
 * trouble: a request that cannot connect marks the server down at once, a 503
 * re-checks, a new server is checked on its first connection, and `status`
 * checks first when the last check is older than the configured interval.
 */
/** The longest the health poll stretches to while the server stays healthy. */
const IDLE_POLL_MAX_MS = 30_000;
/** How often a request waiting for the server to come back checks: a restart is seconds, a load tens. */
const WAIT_POLL_MS = 250;

export class HealthMonitor {
  state: ServerState = "down";
  selfTest: SelfTestResult;
  props: Props | undefined;
  client: LlamaClient | undefined;
  /** How the operator takes a mismatching server as it is; main sets it from how the daemon was started. */
  acceptCommand = "`boxmaker contract accept`, then restart inferproxy";
  private identity = "";
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  /** Checks in a row that found the server as healthy as before: the poll stretches with them. */
  private quietChecks = 0;
  private lastCheckAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly o: HealthMonitorOptions) {
    this.selfTest = notRun(o.contract);
  }

  /** Whether the last self-test is about the server that answers now. */
  get verified(): boolean {
    return this.state === "ok" && this.selfTest.ran;
  }

  /** Runs one check now and then keeps polling. Resolves after the first check. */
  async start(client: LlamaClient): Promise<void> {
    this.client = client;
    await this.check();
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Tells the monitor a request just failed to connect. */
  markDown(): void {
    this.setState("down");
  }

  /**
   * The check on a new connection: `GET /props` as that connection answered it.
   * Throws ServerCheckError to refuse the connection.
   */
  checkConnection(res: RawResponse): void {
    if (res.status === 503) {
      this.setState("loading");
      throw new ServerCheckError(
        "loading",
        `llama-server is loading (GET /props answered 503); retry in ${this.o.pollMs} ms`,
      );
    }
    let props: unknown;
    try {
      props = JSON.parse(res.body);
    } catch {
      props = undefined;
    }
    if (res.status !== 200 || typeof props !== "object" || props === null || Array.isArray(props)) {
      throw new ServerCheckError(
        "unverified",
        `llama-server answered GET /props with HTTP ${res.status} (${res.body.slice(0, 200)}); it cannot be checked against the contract`,
      );
    }
    this.onProps(props as Props);
    if (!this.selfTest.passed) {
      const model = this.props?.model_path ?? this.props?.model_alias;
      throw new ServerCheckError(
        "mismatch",
        refusalMessage(this.client?.label ?? "?", this.selfTest, model, this.acceptCommand),
      );
    }
  }

  /** Re-runs the self-test when a different server (or a new process) answered. */
  private onProps(props: Props): void {
    this.setState("ok");
    const id = serverIdentity(props);
    if (id === this.identity && this.selfTest.ran) return;
    const before = this.props;
    this.identity = id;
    this.props = props;
    const chosen = chooseContract(props, { contract: this.o.contract, contracts: [...(this.o.contracts ?? [])] });
    this.selfTest = evaluateProps(props, chosen.contract, Date.now());
    this.selfTest.modelKey = chosen.modelKey;
    this.selfTest.contractEntry = chosen.entry;
    if (!this.selfTest.passed && !chosen.entry && chosen.known.length) {
      this.selfTest.mismatches.push(
        `model: contracts has no entry for "${chosen.modelKey}" (it has ${chosen.known.map((k) => `"${k}"`).join(", ")}), so it is held to contract`,
      );
    }
    if (!this.selfTest.passed) this.selfTest.acceptCommand = this.acceptCommand;
    if (before) {
      this.o.log.warn(
        {
          upstream: this.client?.label,
          before: { model: before.model_path, build: before.build_info },
          now: { model: props.model_path, build: props.build_info },
          self_test: this.selfTest.passed ? "passed" : "failed",
        },
        "a new llama-server process answers; self-test re-run",
      );
    }
    this.o.onSelfTest?.(this.selfTest);
  }

  /**
   * One health check; concurrent callers share it. The idle poll closes its
   * connection when answered (`closeAfter`): on this kind of machine the
   * keep-alive timer's close seconds later cost a wake-up of its own.
   */
  check(closeAfter = false): Promise<void> {
    this.running ??= this.checkOnce(closeAfter).finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * Waits until the server answers `/health` and its self-test has run (the
   * server came back after a restart), checking every WAIT_POLL_MS; true when
   * it did within `timeoutMs`, false when it did not or `signal` ended the
   * wait. A request re-sent after the server went away waits here instead of
   * failing at once and being sent again into the same outage.
   */
  async waitForServer(timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.verified) return true;
      if (signal.aborted || performance.now() >= deadline) return false;
      await this.check();
      if (this.verified) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          signal.removeEventListener("abort", done);
          resolve();
        };
        const t = setTimeout(done, Math.min(WAIT_POLL_MS, this.o.pollMs, left));
        signal.addEventListener("abort", done, { once: true });
      });
    }
  }

  /** A check now unless the last one is younger than the configured interval (for `status`). */
  async fresh(): Promise<void> {
    if (performance.now() - this.lastCheckAt >= this.o.pollMs) await this.check();
  }

  /** The wait before the next poll: the configured interval, stretched while nothing changes. */
  nextPollMs(): number {
    if (this.state !== "ok") return this.o.pollMs;
    const max = Math.max(this.o.pollMs, Math.min(IDLE_POLL_MAX_MS, 15 * this.o.pollMs));
    return Math.min(max, this.o.pollMs * 2 ** this.quietChecks);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      const before = this.state;
      void this.check(true).finally(() => {
        this.quietChecks = this.state === "ok" && before === "ok" ? this.quietChecks + 1 : 0;
        this.schedule();
      });
    }, this.nextPollMs());
    this.timer.unref();
  }

  private setState(next: ServerState): void {
    if (next === this.state) return;
    this.quietChecks = 0;
    const log = next === "down" ? this.o.log.warn.bind(this.o.log) : this.o.log.info.bind(this.o.log);
    log({ from: this.state, to: next, upstream: this.client?.label }, "llama-server state");
    this.state = next;
  }

  private async checkOnce(closeAfter: boolean): Promise<void> {
    if (!this.client) return;
    this.lastCheckAt = performance.now();
    try {
      const res = await this.client.json({ method: "GET", path: "/health", timeoutMs: this.o.timeoutMs, closeAfter });
      this.setState(res.status === 200 ? "ok" : res.status === 503 ? "loading" : "down");
    } catch (err) {
      if (err instanceof ServerCheckError) {
        // Up but refused (mismatch) or not checkable: the connection check already set the state.
        if (err.kind === "unverified") this.o.log.warn({ err: err.message }, "llama-server could not be checked");
        return;
      }
      this.setState("down");
    }
  }
}
