import { spawn } from "node:child_process";
import { createRequire } from "node:module";

type NotifyFn = (opts: { ready?: boolean; status?: string; pid?: number }) => Promise<unknown>;
const require = createRequire(import.meta.url);

/**
 * sd_notify through the `systemd-notify` package (which runs systemd's own
 * `systemd-notify` binary, hence NotifyAccess=all in the units). Without
 * NOTIFY_SOCKET there is no systemd to tell, so every call is a no-op.
 */
export class Notifier {
  private readonly notify: NotifyFn | undefined;
  constructor(private readonly env: NodeJS.ProcessEnv = process.env) {
    this.notify = env.NOTIFY_SOCKET ? (require("systemd-notify") as NotifyFn) : undefined;
  }

  get enabled(): boolean {
    return this.notify !== undefined;
  }

  async ready(status: string): Promise<void> {
    await this.notify?.({ ready: true, status, pid: process.pid });
  }

  async status(status: string): Promise<void> {
    await this.notify?.({ status, pid: process.pid });
  }

  /** The package has no STOPPING; the binary takes raw assignments. */
  async stopping(): Promise<void> {
    if (!this.enabled) return;
    await new Promise<void>((resolve) => {
      const p = spawn("systemd-notify", [`--pid=${process.pid}`, "STOPPING=1"], { stdio: "ignore", env: this.env });
      p.once("error", () => resolve());
      p.once("exit", () => resolve());
    });
  }
}
