import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { RealLlama, contractOf, haveRealLlama, inferproxyReady } from "./support/real-llama.js";

/**
 * A new model, as an operator meets it: inferproxy's config holds another
 * template's hash, the real llama-server serves tiny-answer. The stack comes
 * up anyway, refuses the turn saying what differs and how to accept it,
 * `contract show` shows the server's values, `contract accept` writes them,
 * and after inferproxy restarts on that file the same turn works.
 */
describe.skipIf(!haveRealLlama("contract adoption against a real llama-server"))(
  "real llama-server: adopting its contract",
  () => {
    let tmp: ReturnType<typeof tempDir>;
    let llama: RealLlama;
    let stack: Stack;
    let real: Awaited<ReturnType<typeof contractOf>>;

    beforeAll(async () => {
      tmp = tempDir("bxr-contract-");
      llama = await new RealLlama({ model: "answer", socketPath: join(tmp.dir, "llama.sock") }).start();
      real = await contractOf(llama);
      const recorded = { ...real, template_sha256: "0".repeat(64) };
      stack = await new Stack(join(tmp.dir, "stack"), {
        upstream: { socketPath: llama.socketPath, contract: recorded },
      }).start();
    }, 120_000);

    afterAll(async () => {
      await stack?.stop();
      await llama?.close();
      tmp?.cleanup();
    }, 60_000);

    it("refused with what differs, shown, accepted, and served after a restart", async () => {
      const config = stack.daemons.get("inferproxy")!.configPath;
      const refused = await stack.cli(["run", "say", "done"], { timeoutMs: 120_000 });
      const said = refused.stdout + refused.stderr;
      expect(refused.code).not.toBe(0);
      expect(said).toContain("FAILED_PRECONDITION");
      expect(said).toContain(
        `does not match the contract (template_sha256: expected 000000000000…, server has ${real.template_sha256.slice(0, 12)}…)`,
      );
      expect(said).toContain(`boxmaker contract accept --config ${config}`);

      const show = await stack.cli(["contract", "show", "--json", "--config", config], { timeoutMs: 60_000 });
      expect(show.code).toBe(0);
      expect(JSON.parse(show.stdout)).toMatchObject({
        verdict: "differs",
        differs: ["template_sha256"],
        server: { state: "ok", ...real },
      });

      const accept = await stack.cli(["contract", "accept", "--config", config], { timeoutMs: 60_000 });
      expect(accept.code, accept.stderr).toBe(0);
      // The served model's entry in the contract table, with the template probe's verdict; `contract` left as it was.
      const model = "tiny-answer.gguf";
      expect(accept.stdout).toContain(`a contracts entry for ${model}:`);
      expect(accept.stdout).toContain(`contracts["${model}"].template_sha256: ${real.template_sha256}`);
      const written = JSON.parse(readFileSync(config, "utf8"));
      expect(written.contracts).toEqual([{ model, ...real, probe_verdict: "ok" }]);
      expect(written.contract.template_sha256).toBe("0".repeat(64));

      await stack.kill("inferproxy", "SIGTERM");
      stack.configs.inferproxy = JSON.parse(readFileSync(config, "utf8"));
      await stack.startDaemon("inferproxy");
      await inferproxyReady(stack.sockets.inferproxy);
      let served = await stack.cli(["run", "say", "done"], { timeoutMs: 120_000 });
      // loopd finds the restarted inferproxy on its next connection: one refused call at most.
      for (let i = 0; i < 20 && served.code !== 0 && /UNAVAILABLE/.test(served.stdout + served.stderr); i++) {
        await new Promise((r) => setTimeout(r, 250));
        served = await stack.cli(["run", "say", "done"], { timeoutMs: 120_000 });
      }
      expect(served.code, served.stdout + served.stderr).toBe(0);
      expect(served.stdout).toContain("Done.");
      const ok = await stack.cli(["contract", "show", "--config", config], { timeoutMs: 60_000 });
      expect(ok.code).toBe(0);
      expect(ok.stdout).toContain("verdict: matches");
    }, 300_000);
  },
);
