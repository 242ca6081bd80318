import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { socketIsLive } from "@boxmaker/common";
import { startLlamaSim, type LlamaSim } from "@boxmaker/llama-sim";
import { FakeNotifySocket } from "../support/notify-socket.js";
import { requires } from "../support/requirements.js";
import { repoRoot, waitFor } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { environment, execStart, readUnit, value } from "./unit-file.js";

/**
 * Runs each daemon exactly as its unit's ExecStart says, with the unit's
 * Environment= and the shipped example config (deploy/config), only the
 * system paths moved into a temp dir, under a NOTIFY_SOCKET played by
 * FakeNotifySocket: what systemd would see.
 */
type Daemon = "inferproxy" | "brokerd" | "loopd";

describe.skipIf(!requires("the units' readiness under a notify socket", ["python3"]))(
  "the units' readiness under a notify socket",
  () => {
    let tmp: ReturnType<typeof tempDir>;
    let notify: FakeNotifySocket;
    let sim: LlamaSim | undefined;
    const procs: ChildProcess[] = [];
    const stderr = new Map<ChildProcess, string>();

    const moved = (s: string) =>
      s
        .replaceAll("/run/boxmaker", join(tmp.dir, "run"))
        .replaceAll("/var/lib/boxmaker", join(tmp.dir, "state"))
        .replaceAll("/etc/boxmaker", join(tmp.dir, "etc"))
        .replaceAll("/opt/boxmaker", repoRoot);

    function startAsUnit(d: Daemon, configExtra: Record<string, unknown> = {}): { proc: ChildProcess; socket: string } {
      const unit = readUnit(`boxmaker-${d}.service`);
      expect(value(unit, "Service", "Type")).toBe("notify");
      const config = {
        ...JSON.parse(moved(readFileSync(join(repoRoot, "deploy", "config", `${d}.json`), "utf8"))),
        ...configExtra,
      };
      writeFileSync(join(tmp.dir, "etc", `${d}.json`), JSON.stringify(config));
      const [cmd, ...args] = execStart(unit).map(moved);
      expect(cmd).toBe("node");
      const proc = spawn(process.execPath, args, {
        env: { ...process.env, ...environment(unit), NOTIFY_SOCKET: notify.path },
        stdio: ["ignore", "ignore", "pipe"],
      });
      stderr.set(proc, "");
      proc.stderr!.on("data", (b: Buffer) => stderr.set(proc, stderr.get(proc) + b.toString()));
      procs.push(proc);
      return { proc, socket: config.socket as string };
    }

    async function sigtermLeavesNothing(proc: ChildProcess, socket: string): Promise<void> {
      const exited = once(proc, "exit");
      proc.kill("SIGTERM");
      const [code] = (await exited) as [number | null];
      expect(code, stderr.get(proc)).toBe(0);
      await notify.waitFor("STOPPING=1");
      expect(existsSync(socket)).toBe(false);
    }

    beforeEach(async () => {
      tmp = tempDir("bx-unit-");
      for (const d of ["run", "state", "etc"]) mkdirSync(join(tmp.dir, d));
      notify = new FakeNotifySocket(join(tmp.dir, "notify.sock"));
      await notify.start();
    });

    afterEach(async () => {
      for (const p of procs.splice(0)) {
        if (p.exitCode === null && p.signalCode === null) {
          p.kill("SIGKILL");
          await once(p, "exit");
        }
      }
      await sim?.close();
      sim = undefined;
      await notify.stop();
      tmp.cleanup();
    });

    it("inferproxy: serves its socket while llama-server loads, READY=1 only once the server matches the contract", async () => {
      sim = await startLlamaSim({ socketPath: join(tmp.dir, "run", "llama.sock"), loading: true });
      const { proc, socket } = startAsUnit("inferproxy", {
        contract: sim.contract,
        health_poll_ms: 100,
      });
      await waitFor(() => existsSync(socket), 15_000, "inferproxy socket");
      expect(await socketIsLive(socket)).toBe(true);
      // The socket accepts, but the model is still loading: systemd must keep waiting.
      await new Promise((r) => setTimeout(r, 1000));
      expect(notify.messages.filter((m) => m.includes("READY=1"))).toEqual([]);

      sim.setLoading(false);
      await notify.waitFor("READY=1");
      expect(await socketIsLive(socket)).toBe(true);
      await sigtermLeavesNothing(proc, socket);
    });

    it.each(["brokerd", "loopd"] as const)(
      "%s: READY=1 arrives when its socket already accepts connections",
      async (d) => {
        const { proc, socket } = startAsUnit(d);
        let liveAtReady: boolean | undefined;
        // Check the socket the moment READY=1 lands, before anything else runs.
        const ready = notify.waitFor("READY=1", 15_000).then(async (m) => {
          liveAtReady = await socketIsLive(socket);
          return m;
        });
        expect(await ready).toContain("READY=1");
        expect(liveAtReady).toBe(true);
        await sigtermLeavesNothing(proc, socket);
      },
    );
  },
);
