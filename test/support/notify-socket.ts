import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";

/**
 * Plays systemd's notify socket: a Unix datagram socket (Node has none, so
 * python3 holds it) that prints each datagram as one JSON line.
 */
export class FakeNotifySocket {
  readonly messages: string[] = [];
  private proc: ChildProcess | undefined;
  private waiters: Array<() => void> = [];
  constructor(readonly path: string) {}

  async start(): Promise<void> {
    const script = `
import socket, sys, json
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print("BOUND", flush=True)
while True:
    data = s.recv(65536)
    print(json.dumps(data.decode()), flush=True)
`;
    this.proc = spawn("python3", ["-c", script, this.path], { stdio: ["ignore", "pipe", "inherit"] });
    let buf = "";
    let bound!: () => void;
    const isBound = new Promise<void>((r) => (bound = r));
    this.proc.stdout!.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line === "BOUND") bound();
        else {
          this.messages.push(JSON.parse(line) as string);
          for (const w of this.waiters.splice(0)) w();
        }
      }
    });
    await isBound;
    if (!existsSync(this.path)) throw new Error("notify socket not created");
  }

  /** Resolves with the first datagram containing `needle`. */
  async waitFor(needle: string, timeoutMs = 10_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.messages.find((m) => m.includes(needle));
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no ${needle} on notify socket; got ${JSON.stringify(this.messages)}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 100);
      });
    }
  }

  async stop(): Promise<void> {
    if (!this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill();
    await once(this.proc, "exit");
  }
}
