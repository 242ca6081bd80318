import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import type { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { RealLlama, haveRealLlama, startStackOn } from "./support/real-llama.js";

/**
 * llama-server is killed and restarted on the same socket with another model
 * (tiny-answer: Qwen3 template → tiny-tool: Qwen3.5 template) between two
 * turns. inferproxy checks every new connection against the contract, so the
 * next turn is refused with a message that says what differs, `status` says
 * so, and once the right model is back turns work again.
 */
describe.skipIf(!haveRealLlama("model swap against a real llama-server"))("real llama-server: model swap", () => {
  let tmp: ReturnType<typeof tempDir>;
  let llama: RealLlama;
  let stack: Stack;

  beforeAll(async () => {
    tmp = tempDir("bxr-swap-");
    llama = await new RealLlama({ model: "answer", socketPath: join(tmp.dir, "llama.sock") }).start();
    stack = await startStackOn(llama, join(tmp.dir, "stack"));
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await llama?.close();
    tmp?.cleanup();
  }, 60_000);

  it("the turn after a swap to another template is refused and status says why; swapped back, turns work", async () => {
    const first = await stack.cli(["run", "say", "done"], { timeoutMs: 120_000 });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("Done.");

    await llama.stop("SIGKILL");
    await llama.start("tool");
    const swappedAt = performance.now();

    const refused = await stack.cli(["run", "say", "done", "again"], { timeoutMs: 120_000 });
    const refusedAfter = performance.now() - swappedAt;
    const said = refused.stdout + refused.stderr;
    expect(refused.code).not.toBe(0);
    expect(said).toMatch(/does not match the contract/);
    expect(said).toMatch(/template_sha256: expected [0-9a-f]{12}…, server has [0-9a-f]{12}…/);
    expect(said).not.toMatch(/more chars in the daemon log/);
    expect(said).toMatch(/tiny-tool\.gguf/);
    expect(said).toContain(`boxmaker contract accept --config ${stack.daemons.get("inferproxy")!.configPath}`);

    const status = await stack.cli(["status"], { timeoutMs: 60_000 });
    expect(status.code).not.toBe(0);
    expect(status.stdout).toMatch(/self-test\s+FAILED: template_sha256: expected/);
    expect(status.stdout).toMatch(/model\s+\S*tiny-tool\.gguf/);

    await llama.stop("SIGKILL");
    await llama.start("answer");
    const back = await stack.cli(["run", "say", "done", "once", "more"], { timeoutMs: 120_000 });
    expect(back.code, back.stdout + back.stderr).toBe(0);
    expect(back.stdout).toContain("Done.");
    const ok = await stack.cli(["status"], { timeoutMs: 60_000 });
    expect(ok.stdout).toMatch(/self-test\s+passed/);
    expect(ok.stdout).toMatch(/model\s+\S*tiny-answer\.gguf/);
    console.log(`model swap: the refused turn ended ${Math.round(refusedAfter)} ms after the swapped server was up`);
  }, 300_000);

  it("while llama-server is down, status does not say the self-test passed", async () => {
    await llama.stop("SIGTERM");
    let st = await stack.cli(["status"], { timeoutMs: 60_000 });
    for (let i = 0; i < 100 && !/state\s+down/.test(st.stdout); i++) {
      await new Promise((r) => setTimeout(r, 100));
      st = await stack.cli(["status"], { timeoutMs: 60_000 });
    }
    expect(st.stdout).toMatch(/state\s+down/);
    expect(st.stdout).not.toMatch(/self-test\s+passed/);
    await llama.start("answer");
  }, 120_000);
});
