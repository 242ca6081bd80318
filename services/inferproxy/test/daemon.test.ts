import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { InferService, createClient } from "@boxmaker/common";
import { startLlamaSim, type LlamaSim, type SimContract } from "@boxmaker/llama-sim";
import { FakeNotifySocket } from "../../../test/support/notify-socket.js";
import { requires } from "../../../test/support/requirements.js";
import { tempDir } from "../../../test/support/tmp.js";

const haveNotify = requires("inferproxy readiness under sd_notify", ["python3"]);

const repo = resolve(fileURLToPath(import.meta.url), "../../../..");
const mainJs = join(repo, "services/inferproxy/dist/main.js");

beforeAll(() => {
  // The test runs the daemon as systemd would: the built code, as a child process.
  execFileSync("npx", ["tsc", "-b", "services/inferproxy"], { cwd: repo, stdio: "inherit" });
}, 120_000);

let tmp: ReturnType<typeof tempDir>;
let sim: LlamaSim | undefined;
let notify: FakeNotifySocket | undefined;
let child: ChildProcess | undefined;
let stderr = "";

afterEach(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill("SIGKILL");
    await once(child, "exit");
  }
  child = undefined;
  // stop() twice would wait forever for a second exit event.
  await notify?.stop();
  notify = undefined;
  await sim?.close();
  sim = undefined;
  tmp?.cleanup();
});

/** Starts the simulator and the built daemon; `contract` adjusts what the daemon expects of the simulator. */
async function boot(contract: (sim: SimContract) => SimContract = (c) => c) {
  tmp = tempDir("bxd-");
  const llamaSocket = join(tmp.dir, "llama.sock");
  sim = await startLlamaSim({ socketPath: llamaSocket });
  notify = new FakeNotifySocket(join(tmp.dir, "notify.sock"));
  await notify.start();
  const socket = join(tmp.dir, "inferproxy.sock");
  const file = join(tmp.dir, "inferproxy.json");
  writeFileSync(
    file,
    JSON.stringify({
      socket,
      upstream: { socket_path: llamaSocket },
      contract: contract(sim.contract),
      health_poll_ms: 100,
      log_level: "warn",
    }),
  );
  stderr = "";
  child = spawn(process.execPath, [mainJs, "--config", file], {
    env: { ...process.env, NOTIFY_SOCKET: notify.path },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return { socket };
}

describe("inferproxy as a child process", () => {
  it.skipIf(!haveNotify)(
    "sends READY=1 once its socket serves calls and the self-test passed; SIGTERM removes the socket",
    async () => {
      const { socket } = await boot();
      await notify!.waitFor("READY=1");
      // At READY the socket already answers; no retry loop needed.
      const c = createClient(InferService, socket);
      const st = await c.status({}, { timeoutMs: 2000 });
      expect(st.selfTest).toMatchObject({ ran: true, passed: true });
      sim!.enqueue({ content: "hi" });
      const events = [];
      for await (const ev of c.complete({ slot: 0, messagesJson: '[{"role":"user","content":"x"}]' }))
        events.push(ev.event.case);
      expect(events.at(-1)).toBe("final");
      c.close();
      child!.kill("SIGTERM");
      const [code] = await once(child!, "exit");
      expect(code).toBe(0);
      expect(existsSync(socket)).toBe(false);
    },
  );

  it.skipIf(!haveNotify)(
    "with a mismatching contract: serves Status with the mismatches but never sends READY=1",
    async () => {
      const { socket } = await boot((c) => ({ ...c, n_ctx_per_slot: 131072 }));
      const c = createClient(InferService, socket);
      await c.waitForReady(10_000);
      // The daemon says so (STATUS=) once the self-test has run; Status reports that run from then on.
      await notify!.waitFor("self-test failed");
      const st = await c.status({});
      expect(st.selfTest?.ran).toBe(true);
      expect(st.selfTest!.passed).toBe(false);
      expect(st.selfTest!.mismatches).toEqual([
        "n_ctx per slot: expected 131072, got 32768 (check --ctx-size / --parallel)",
      ]);
      // The self-test has run and failed: whatever was going to be sent about it has been sent.
      expect(notify!.messages.some((m) => m.includes("READY=1"))).toBe(false);
      expect(stderr).toMatch(/"expected":\{"template_sha256":"[0-9a-f]{64}","n_ctx":131072/);
      c.close();
    },
  );

  it("a malformed config file → non-zero exit and one stderr line naming the bad key", async () => {
    tmp = tempDir("bxd-");
    const file = join(tmp.dir, "bad.json");
    writeFileSync(file, JSON.stringify({ sampling: { temprature: 0.7 } }));
    child = spawn(process.execPath, [mainJs, "--config", file], { stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const [code] = await once(child, "exit");
    expect(code).not.toBe(0);
    expect(err.trim().split("\n")).toHaveLength(1);
    expect(err).toContain('"sampling.temprature" is not a known setting');
  });
});
