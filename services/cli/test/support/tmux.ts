import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { promisify } from "node:util";
import { cliMain } from "../../../../test/support/stack.js";

const run = promisify(execFile);

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * A private tmux server: a real pseudo-terminal for the CLI, so the TTY,
 * readline, colour and Ctrl-C paths run exactly as they do for a person.
 * Each instance has its own server socket name; kill() removes it.
 */
export class Tmux {
  readonly server = `bxt-${process.pid}-${randomBytes(4).toString("hex")}`;
  private socketPath: string | undefined;

  private tmux(...args: string[]) {
    return run("tmux", ["-L", this.server, "-f", "/dev/null", ...args]);
  }

  /**
   * A shell line running the CLI, then printing its exit code, then keeping
   * the pane open so the final screen can still be captured.
   */
  static cliLine(args: string[], env: Record<string, string | undefined>): string {
    return `${Tmux.cliCommand(args, env)}; echo "[exit $?]"; sleep 3600`;
  }

  /** The shell command running the CLI with `env` (undefined: unset), to build a line of one's own around. */
  static cliCommand(args: string[], env: Record<string, string | undefined>): string {
    const unset = Object.entries(env)
      .filter(([, v]) => v === undefined)
      .map(([k]) => `-u ${k}`);
    const set = Object.entries(env)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => quote(`${k}=${v}`));
    return ["env", ...unset, ...set, quote(process.execPath), quote(cliMain), ...args.map(quote)].join(" ");
  }

  /** Opens the first window running `line` on a terminal of `size`; further panes come from split(). */
  async start(line: string, size = { columns: 120, rows: 40 }): Promise<string> {
    await this.tmux("new-session", "-d", "-x", String(size.columns), "-y", String(size.rows), "-s", "main", line);
    this.socketPath = (await this.tmux("display-message", "-p", "#{socket_path}")).stdout.trim();
    return "main:0.0";
  }

  /** A second pane in the same window, e.g. the terminal that approves. */
  async split(line: string): Promise<string> {
    const { stdout } = await this.tmux("split-window", "-t", "main:0", "-v", "-P", "-F", "#{pane_id}", line);
    return stdout.trim();
  }

  /** Any tmux command against this server (an option, a pane's title, the paste buffers); its output. */
  async command(...args: string[]): Promise<string> {
    return (await this.tmux(...args)).stdout;
  }

  async keys(target: string, ...keys: string[]): Promise<void> {
    await this.tmux("send-keys", "-t", target, ...keys);
  }

  /** Types text literally (no key-name lookup), then Enter. */
  async type(target: string, text: string): Promise<void> {
    await this.tmux("send-keys", "-t", target, "-l", text);
    await this.tmux("send-keys", "-t", target, "Enter");
  }

  /** Pastes text as a terminal paste does (all at once; newlines arrive as Enter). */
  async paste(target: string, text: string): Promise<void> {
    await this.tmux("set-buffer", "-b", "bxpaste", text);
    await this.tmux("paste-buffer", "-b", "bxpaste", "-t", target);
  }

  /** The pane's screen (and scrollback); with `escapes`, including colour sequences. */
  async screen(target: string, escapes = false): Promise<string> {
    const { stdout } = await this.tmux(
      "capture-pane",
      "-p",
      "-J",
      "-S",
      "-200",
      ...(escapes ? ["-e"] : []),
      "-t",
      target,
    );
    return stdout;
  }

  /** Polls the screen until `pred` holds; returns that screen. */
  async waitFor(target: string, pred: (screen: string) => boolean, what: string, timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = await this.screen(target);
      if (pred(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; screen was:\n${screen}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async kill(): Promise<void> {
    if (!this.socketPath) return;
    await this.tmux("kill-server").catch(() => undefined);
    // tmux leaves its socket file behind when killed.
    rmSync(this.socketPath, { force: true });
    this.socketPath = undefined;
  }
}
