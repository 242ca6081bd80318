import type { Logger } from "@boxmaker/common";
import type { ContractConfig } from "./config.js";
import type { LlamaClient } from "./llama-client.js";
import { evaluateProps, notRun, type Props, type SelfTestResult } from "./self-test.js";

export type ServerState = "ok" | "loading" | "down";

export interface HealthMonitorOptions {
  client: LlamaClient;
  contract: ContractConfig;
  pollMs: number;
  timeoutMs: number;
  log: Logger;
  /** Called after every self-test run (start-up and each time the server comes back). */
  onSelfTest?: (result: SelfTestResult) => void;
}

/**
 * Polls `/health`. Whenever the server becomes healthy after being down,
 * loading or not yet seen, it re-reads `/props` and re-runs the self-test: a
 * restarted llama-server may have been started with another model, template
 * or context size.
 */
export class HealthMonitor {
  state: ServerState = "down";
  selfTest: SelfTestResult;
  props: Props | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private needsSelfTest = true;

  constructor(private readonly o: HealthMonitorOptions) {
    this.selfTest = notRun(o.contract);
  }

  /** Runs one check now and then keeps polling. Resolves after the first check. */
  async start(): Promise<void> {
    await this.check();
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  /** Tells the monitor a request just failed to connect, so the next poll re-tests on recovery. */
  markDown(): void {
    if (this.state !== "down") this.o.log.warn({ upstream: this.o.client.label }, "llama-server is down");
    this.state = "down";
    this.needsSelfTest = true;
  }

  /** One health check (and a self-test if due); concurrent callers share it. */
  check(): Promise<void> {
    this.running ??= this.checkOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.check().finally(() => this.schedule());
    }, this.o.pollMs);
    this.timer.unref();
  }

  private async checkOnce(): Promise<void> {
    const prev = this.state;
    let next: ServerState;
    try {
      const res = await this.o.client.json({ method: "GET", path: "/health", timeoutMs: this.o.timeoutMs });
      next = res.status === 200 ? "ok" : res.status === 503 ? "loading" : "down";
    } catch {
      next = "down";
    }
    if (next !== prev) this.o.log.info({ from: prev, to: next, upstream: this.o.client.label }, "llama-server state");
    this.state = next;
    if (next !== "ok") {
      this.needsSelfTest = true;
      return;
    }
    if (this.needsSelfTest) await this.runSelfTest();
  }

  private async runSelfTest(): Promise<void> {
    try {
      const res = await this.o.client.json({ method: "GET", path: "/props", timeoutMs: this.o.timeoutMs });
      if (res.status !== 200 || typeof res.json !== "object" || res.json === null) {
        this.o.log.warn({ status: res.status, body: res.text.slice(0, 300) }, "GET /props failed; self-test postponed");
        return;
      }
      this.props = res.json as Props;
      this.selfTest = evaluateProps(this.props, this.o.contract, Date.now());
      this.needsSelfTest = false;
      this.o.onSelfTest?.(this.selfTest);
    } catch (err) {
      this.o.log.warn({ err }, "GET /props failed; self-test postponed");
    }
  }
}
