import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { runCli, waitFor } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { alive } from "../support/processes.js";
import { Up, stopUp } from "../support/up-process.js";
import { haveRealLlama, realBuild } from "./support/real-llama.js";

/**
 * `boxmaker up --llama-server` with a real binary: it starts llama-server with
 * the contract's flags on its own socket, runs turns through the whole stack,
 * and when the server is killed (leaving its socket file behind, which makes a
 * plain restart fail to bind) clears the stale socket, restarts the server and
 * serves the next turn without restarting any daemon.
 */
describe.skipIf(!haveRealLlama("real llama-server: boxmaker up --llama-server"))(
  "boxmaker up with a real llama-server",
  () => {
    let tmp: ReturnType<typeof tempDir>;
    let up: Up;
    let env: NodeJS.ProcessEnv;
    const run = () => join(tmp.dir, "run");

    beforeAll(async () => {
      tmp = tempDir("bxr-up-");
      const ws = join(tmp.dir, "ws");
      mkdirSync(ws);
      up = new Up(
        [
          "--llama-server",
          realBuild!.server,
          "--model",
          realBuild!.models.answer,
          "--llama-arg=-t",
          "--llama-arg=2",
          // The stack's q8_0 KV needs head sizes that are multiples of 32; the tiny model's are 16.
          "--llama-arg=--cache-type-k",
          "--llama-arg=f16",
          "--llama-arg=--cache-type-v",
          "--llama-arg=f16",
          // The tiny model's template is not the production one: take the server's contract.
          "--accept-server-contract",
          "--sandbox",
          "none",
          "--runtime-dir",
          run(),
          "--state-dir",
          join(tmp.dir, "state"),
          "--workspace",
          ws,
          "--log-level",
          "warn",
        ],
        tmp.dir,
      );
      await up.ready(120_000);
      env = { BOXMAKER_SOCKET: join(run(), "loopd.sock") };
    }, 150_000);
    afterAll(async () => {
      if (up) await stopUp(up);
      tmp?.cleanup();
    });

    it("serves turns, survives a killed server (stale socket cleared) without restarting a daemon", async () => {
      const first = await runCli(["run", "hello"], { env, timeoutMs: 60_000 });
      expect(first.stderr).not.toMatch(/error/i);
      expect(first.code).toBe(0);
      expect(first.stdout).toContain("Done.");

      const daemons = ["inferproxy", "brokerd", "loopd"].map((n) => up.pid(n));
      const serverPid = up.pid("llama-server");
      const sock = join(run(), "llama.sock");
      const killedAt = Date.now();
      expect(statSync(sock).ctimeMs).toBeLessThan(killedAt);
      process.kill(serverPid, "SIGKILL");
      await waitFor(
        () => /llama-server restarted and ready \(pid \d+\)/.test(up.stdout + up.stderr),
        90_000,
        "llama-server restart",
      );
      // A fresh socket (inode numbers are reused, so compare creation times): the stale one was
      // removed before the new server bound, or it would have failed to start.
      expect(statSync(sock).ctimeMs).toBeGreaterThan(killedAt);

      // The daemons kept running; the next turns are served by the new server.
      for (const pid of daemons) expect(alive(pid)).toBe(true);
      const after = await runCli(["run", "are you back?"], { env, timeoutMs: 60_000 });
      expect(after.stderr).not.toMatch(/error/i);
      expect(after.code).toBe(0);
      expect(after.stdout).toContain("Done.");
      const status = await runCli(["status"], { env });
      expect(status.code).toBe(0);
      for (const pid of daemons) expect(alive(pid)).toBe(true);
    }, 240_000);
  },
);
