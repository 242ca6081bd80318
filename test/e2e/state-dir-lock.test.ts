import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DAEMON_NODE_FLAGS } from "@boxmaker/common";
import { daemonMain, waitFor } from "../support/stack.js";
import { useStack } from "../support/use-stack.js";
import { loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";

type DaemonName = "inferproxy" | "brokerd" | "loopd";

/** A daemon started on `config` beside the stack's own, its output collected. */
function spawnDaemon(name: DaemonName, config: string) {
  const proc = spawn(process.execPath, [...DAEMON_NODE_FLAGS, daemonMain(name), "--config", config], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, NOTIFY_SOCKET: "" },
  });
  const out = { proc, stdout: "", stderr: "" };
  proc.stderr!.on("data", (b: Buffer) => (out.stderr += b.toString()));
  proc.stdout!.on("data", (b: Buffer) => (out.stdout += b.toString()));
  return out;
}

async function terminate(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = once(proc, "exit");
  proc.kill("SIGTERM");
  await exited;
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * One writer per state directory: a second daemon of any kind on a running
 * stack's directories (another socket, the same state) refuses at start, in
 * one line naming the holder, and leaves the first serving.
 */
describe("a second daemon on a running stack's state directory", () => {
  const t = useStack("bxsl-");

  const dirOf = (name: DaemonName): { key: string; dir: string } => {
    const c = t.stack.configs[name]!;
    return name === "inferproxy"
      ? { key: "slot_files.dir", dir: (c.slot_files as { dir: string }).dir }
      : { key: "state_dir", dir: c.state_dir as string };
  };

  for (const name of ["loopd", "brokerd", "inferproxy"] as const) {
    it(`${name}: refused with exit 1 and one line naming the holder's pid and socket`, async () => {
      const first = t.stack.daemons.get(name)!;
      const socket = join(t.dir, `second-${name}.sock`);
      const config = join(t.dir, `second-${name}.json`);
      writeFileSync(config, JSON.stringify({ ...t.stack.configs[name], socket }));
      const second = spawnDaemon(name, config);
      const [code] = (await once(second.proc, "exit")) as [number | null];
      const { key, dir } = dirOf(name);
      expect(code, second.stderr).toBe(1);
      expect(second.stderr).toMatch(
        new RegExp(
          `^fatal: ${esc(dir)} is in use by ${name} pid ${first.proc.pid} \\(socket ${esc(first.socket)}, since [^)]+\\): stop that one, or give this one another ${esc(key)}\\n$`,
        ),
      );
      // Refused before it served or wrote anything: no socket, and not a single log record.
      expect(second.stdout).toBe("");
    }, 30_000);
  }

  it("the first stack still serves a turn afterwards", async () => {
    const r = await t.stack.cli(["run", "still mine?"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('You said: "still mine?"');
  }, 30_000);
});

/**
 * The way turns were lost: one session, messages sent through two stacks'
 * loopds on one state directory in generated orders. Each loopd appends at
 * the end of the log as it knows it, so without the lock a turn one of them
 * acknowledged (and fsync'd) was overwritten by the other's. Now the second
 * loopd never starts, and every turn a client saw acknowledged is in the
 * session as a freshly started loopd reads it from disk.
 */
describe("turns sent to one session through two stacks", () => {
  const t = useStack("bxsw-");

  it("every acknowledged turn is on disk, whatever the order", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom("A", "B"), { minLength: 2, maxLength: 5 }), async (order) => {
        run++;
        const a = loopClient(t.stack.sockets.loopd);
        let b: { daemon: ReturnType<typeof spawnDaemon>; client?: LoopClient } | undefined;
        const acked: string[] = [];
        const refusals: string[] = [];
        try {
          const id = await newSession(a, `run ${run}`);
          for (const [i, via] of order.entries()) {
            const text = `run ${run} turn ${i} via ${via}`;
            let c: LoopClient | undefined = a;
            if (via === "B") {
              if (!b) {
                // The second stack's loopd: the same config, its own socket.
                const socket = join(t.dir, `b${run}.sock`);
                const config = join(t.dir, `b${run}.json`);
                writeFileSync(config, JSON.stringify({ ...t.stack.configs.loopd, socket }));
                const daemon = spawnDaemon("loopd", config);
                await waitFor(() => existsSync(socket) || daemon.proc.exitCode !== null, 15_000, "second loopd");
                b = { daemon, ...(daemon.proc.exitCode === null ? { client: loopClient(socket) } : {}) };
                if (!b.client) refusals.push(daemon.stderr);
              }
              c = b.client;
            }
            if (!c) continue;
            const events = await turn(c, id, text).catch(() => []);
            if (events.at(-1)?.event.case === "turnDone") acked.push(text);
          }
          b?.client?.close();
          if (b) await terminate(b.daemon.proc);
          // What is on disk, as a loopd that starts now reads it.
          await t.stack.kill("loopd", "SIGTERM");
          await t.stack.startDaemon("loopd");
          const check = loopClient(t.stack.sockets.loopd);
          await check.waitForReady(5_000);
          const h = await check.getSession({ id });
          check.close();
          const users = h.messages
            .map((m) => JSON.parse(m.messageJson) as { role: string; content?: string })
            .filter((m) => m.role === "user")
            .map((m) => m.content);
          for (const text of acked) expect(users, `acknowledged, then lost: ${text}`).toContain(text);
          // Every turn sent through the first stack was acknowledged; the second never served one.
          expect(acked).toEqual(order.flatMap((v, i) => (v === "A" ? [`run ${run} turn ${i} via A`] : [])));
          expect(refusals).toHaveLength(order.includes("B") ? 1 : 0);
          for (const r of refusals)
            expect(r).toMatch(
              new RegExp(
                `^fatal: ${esc(t.stack.configs.loopd!.state_dir as string)} is in use by loopd pid \\d+ .*\\n$`,
              ),
            );
        } finally {
          a.close();
          b?.client?.close();
          if (b) await terminate(b.daemon.proc);
        }
      }),
      // B then A is how a turn was lost; the generated orders add the rest. No shrinking: each run is processes.
      { numRuns: 5, examples: [[["A", "B", "A"]]], endOnFailure: true },
    );
  }, 240_000);
});
