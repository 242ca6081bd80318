import { afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { startLlamaSim, type LlamaSim, type SimContract } from "@boxmaker/llama-sim";
import { FakeNotifySocket } from "../support/notify-socket.js";
import { requires } from "../support/requirements.js";
import { daemonMain } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";

type Name = "inferproxy" | "brokerd" | "loopd";

function configFor(name: Name, dir: string, llamaSock: string, contract: SimContract): Record<string, unknown> {
  const sock = join(dir, `${name}.sock`);
  switch (name) {
    case "inferproxy":
      return {
        socket: sock,
        upstream: { socket_path: llamaSock },
        contract,
        log_level: "warn",
      };
    case "brokerd":
      // The workspace must not contain brokerd's socket or state (brokerd refuses to start otherwise).
      mkdirSync(join(dir, "ws"), { recursive: true });
      return { socket: sock, state_dir: join(dir, "broker"), workspace_roots: [join(dir, "ws")], log_level: "warn" };
    case "loopd":
      return {
        socket: sock,
        state_dir: join(dir, "loopd"),
        inferproxy_socket: join(dir, "inferproxy.sock"),
        brokerd_socket: join(dir, "brokerd.sock"),
        log_level: "warn",
      };
  }
}

/** True when the socket accepts a connection right now. */
function accepts(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(path);
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

describe
  .skipIf(!requires("daemon lifecycle under sd_notify", ["python3"]))
  .each(["inferproxy", "brokerd", "loopd"] as const)("%s daemon lifecycle", (name) => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: LlamaSim | undefined;
  afterEach(async () => {
    await sim?.close();
    tmp.cleanup();
  });

  it("sends READY=1 only once its socket accepts calls, and SIGTERM leaves no socket", async () => {
    tmp = tempDir("bxd-");
    sim = await startLlamaSim({ socketPath: join(tmp.dir, "llama.sock") });
    const cfg = configFor(name, tmp.dir, join(tmp.dir, "llama.sock"), sim.contract);
    const cfgPath = join(tmp.dir, "c.json");
    writeFileSync(cfgPath, JSON.stringify(cfg));
    const notify = new FakeNotifySocket(join(tmp.dir, "notify.sock"));
    await notify.start();
    const proc = spawn(process.execPath, [daemonMain(name), "--config", cfgPath], {
      env: { ...process.env, NOTIFY_SOCKET: notify.path },
      stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      await notify.waitFor("READY=1", 15_000);
      // At the moment READY=1 arrived the socket was already serving.
      expect(await accepts(cfg.socket as string)).toBe(true);
      const exited = once(proc, "exit");
      proc.kill("SIGTERM");
      const [code] = (await exited) as [number];
      expect(code).toBe(0);
      expect(existsSync(cfg.socket as string)).toBe(false);
    } finally {
      proc.kill("SIGKILL");
      await notify.stop();
    }
  });

  it("exits non-zero with one line naming the bad key of a malformed config", async () => {
    tmp = tempDir("bxd-");
    const cfgPath = join(tmp.dir, "bad.json");
    writeFileSync(cfgPath, JSON.stringify({ socket: join(tmp.dir, "x.sock"), log_level: 42 }));
    const proc = spawn(process.execPath, [daemonMain(name), "--config", cfgPath], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    proc.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
    const [code] = (await once(proc, "exit")) as [number];
    expect(code).not.toBe(0);
    const lines = stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("log_level");
    expect(lines[0]).toContain(cfgPath);
  });
});
