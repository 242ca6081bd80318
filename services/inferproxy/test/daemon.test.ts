import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { InferService, RpcError, Status, createClient } from "@boxmaker/common";
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
      // Not the production slot directory: a stack installed on this machine holds its lock.
      slot_files: { dir: "" },
      log_level: "warn",
    }),
  );
  stderr = "";
  child = spawn(process.execPath, [mainJs, "--config", file], {
    env: { ...process.env, NOTIFY_SOCKET: notify.path },
    stdio: ["ignore", "ignore", "pipe"],
  });
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  return { socket, file };
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
    "with a mismatching contract: READY=1 all the same, STATUS= and every completion say what differs and the command that accepts it",
    async () => {
      const { socket, file } = await boot((c) => ({ ...c, n_ctx_per_slot: 131072 }));
      // Ready rather than "activating": a unit held there blocks boxmaker.target and loopd behind it.
      const ready = await notify!.waitFor("READY=1");
      const command = `boxmaker contract accept --config ${file} && systemctl restart boxmaker-inferproxy`;
      expect(ready).toContain(
        "STATUS=refusing completions: llama-server does not match the contract (n_ctx_per_slot: expected 131072, server has 32768)",
      );
      expect(ready).toContain(command);
      const c = createClient(InferService, socket);
      const st = await c.status({}, { timeoutMs: 2000 });
      expect(st.selfTest).toMatchObject({ ran: true, passed: false, acceptCommand: `\`${command}\`` });
      expect(st.selfTest!.mismatches).toEqual([
        "n_ctx_per_slot: expected 131072, server has 32768 (check --ctx-size / --parallel)",
      ]);
      sim!.enqueue({ content: "never sent" });
      let refused: unknown;
      try {
        for await (const _ of c.complete({ slot: 0, messagesJson: '[{"role":"user","content":"x"}]' })) {
          // a refused completion has no events
        }
      } catch (err) {
        refused = err;
      }
      expect(refused).toBeInstanceOf(RpcError);
      expect((refused as RpcError).status).toBe(Status.FAILED_PRECONDITION);
      expect((refused as RpcError).message).toContain(
        "does not match the contract (n_ctx_per_slot: expected 131072, server has 32768). To use it as it is: ",
      );
      expect((refused as RpcError).message).toContain(command);
      expect(sim!.completions).toHaveLength(0);
      // The log names the fields as the config does.
      expect(stderr).toMatch(/"expected":\{"template_sha256":"[0-9a-f]{64}","n_ctx_per_slot":131072,"total_slots":3\}/);
      expect(stderr).toMatch(/"actual":\{"template_sha256":"[0-9a-f]{64}","n_ctx_per_slot":32768,"total_slots":3\}/);
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
