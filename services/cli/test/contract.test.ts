// Adopting a new model's contract, as an operator does it: the stack comes up against a server
// that does not match, says what differs and the command, `contract accept` writes inferproxy's
// config, and after a restart of inferproxy completions work.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LLAMA_CONTRACT } from "@boxmaker/common/lite";
import { startLlamaSim, type LlamaSim } from "@boxmaker/llama-sim";
import { Stack, runCli } from "../../../test/support/stack.js";
import { tempDir } from "../../../test/support/tmp.js";

const recorded = { template_sha256: "0".repeat(64), n_ctx_per_slot: 131072, total_slots: 3 };

describe("boxmaker contract against a server that does not match", () => {
  let tmp: ReturnType<typeof tempDir>;
  let stack: Stack;
  let config: string;

  beforeAll(async () => {
    tmp = tempDir("bxct-");
    stack = await new Stack(tmp.dir, { inferproxy: { contract: recorded } }).start();
    config = stack.daemons.get("inferproxy")!.configPath;
    // root:boxmaker 0640 in an install: the mode must survive the replacement.
    chmodSync(config, 0o640);
  });
  afterAll(async () => {
    await stack?.stop();
    tmp?.cleanup();
  });

  it("status says what differs and the command; a turn is refused with the same, nothing reaches the server", async () => {
    const st = await stack.cli(["status"]);
    expect(st.code).toBe(1);
    expect(st.stdout).toMatch(/context\s+n_ctx_per_slot 32768 \(expected 131072\), total_slots 3\n/);
    expect(st.stdout).toMatch(/self-test\s+FAILED: template_sha256: expected 0{64}, server has [0-9a-f]{64}/);
    expect(st.stdout).toMatch(new RegExp(`to accept\\s+\`boxmaker contract accept --config ${config}`));

    const run = await stack.cli(["run", "hello"]);
    const said = run.stdout + run.stderr;
    expect(run.code).not.toBe(0);
    expect(said).toContain("FAILED_PRECONDITION");
    expect(said).toMatch(
      /does not match the contract \(template_sha256: expected 0{12}…, server has [0-9a-f]{12}…; n_ctx_per_slot: expected 131072, server has 32768\)/,
    );
    expect(said).toContain(`boxmaker contract accept --config ${config}`);
    expect(said).not.toMatch(/more chars in the daemon log/);
    expect(stack.sim.completions).toHaveLength(0);
  });

  it("contract show prints both sides and the verdict; --json has the same by the config's names", async () => {
    const show = await stack.cli(["contract", "show", "--config", config]);
    // Differing is what show is run to see: 0, so a documented install (sh -e) goes on to accept.
    expect(show.code).toBe(0);
    expect((await stack.cli(["contract", "show", "--check", "--config", config])).code).toBe(1);
    const sha = stack.sim.contract.template_sha256;
    expect(show.stdout).toContain(`template_sha256  server    ${sha}\n`);
    expect(show.stdout).toContain(`contract  ${"0".repeat(64)}  ✗ differs\n`);
    expect(show.stdout).toMatch(/n_ctx_per_slot\s+server\s+32768\n\s+contract\s+131072 {2}✗ differs\n/);
    expect(show.stdout).toMatch(/total_slots\s+server\s+3\n\s+contract\s+3 {2}✓\n/);
    expect(show.stdout).toContain("verdict: differs (template_sha256, n_ctx_per_slot); completions are refused");

    const json = await stack.cli(["contract", "show", "--json", "--config", config]);
    expect(json.code).toBe(0);
    const j = JSON.parse(json.stdout);
    expect(j).toMatchObject({
      verdict: "differs",
      server: { state: "ok", ...stack.sim.contract },
      contract: recorded,
      differs: ["template_sha256", "n_ctx_per_slot"],
      config_file: { path: config, contract: recorded },
    });
    expect(j.accept_command).toContain(`boxmaker contract accept --config ${config}`);
  });

  it("contract accept refuses a missing file (exit 2) and a broken one (exit 1), touching nothing", async () => {
    const missing = await stack.cli(["contract", "accept", "--config", join(tmp.dir, "nope.json")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);
    expect(missing.stderr).toContain(`no inferproxy config at ${join(tmp.dir, "nope.json")}`);
    const broken = join(tmp.dir, "broken.json");
    writeFileSync(broken, '{"socket": ');
    const r = await stack.cli(["contract", "accept", "--config", broken]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/broken\.json is not JSON/);
    expect(readFileSync(broken, "utf8")).toBe('{"socket": ');
  });

  it("contract accept writes the server's values, keeps every other key and the mode, and says to restart", async () => {
    const before = JSON.parse(readFileSync(config, "utf8"));
    const inode = statSync(config).ino;
    const r = await stack.cli(["contract", "accept", "--config", config]);
    expect(r.code, r.stderr).toBe(0);
    // The model's own entry in the contract table, with the probe's verdict; `contract` (any other model) kept.
    const model = "llama-sim.gguf";
    expect(r.stdout).toBe(
      `wrote ${config}: a contracts entry for ${model}:\n` +
        `  contracts["${model}"].template_sha256: ${stack.sim.contract.template_sha256}\n` +
        `  contracts["${model}"].n_ctx_per_slot: 32768\n` +
        `  contracts["${model}"].total_slots: 3\n` +
        "  probe verdict ok\n" +
        "`systemctl restart boxmaker-inferproxy` applies it (inferproxy reads its config at start)\n",
    );
    const after = JSON.parse(readFileSync(config, "utf8"));
    expect(after).toEqual({ ...before, contracts: [{ model, ...stack.sim.contract, probe_verdict: "ok" }] });
    expect(statSync(config).mode & 0o777).toBe(0o640);
    // Replaced by a rename, not rewritten in place; and nothing left beside it.
    expect(statSync(config).ino).not.toBe(inode);
    expect(readdirSync(tmp.dir).filter((n) => n.includes(".bx-"))).toEqual([]);

    const again = await stack.cli(["contract", "accept", "--json", "--config", config]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({
      config,
      model,
      added: false,
      probe_verdict: "ok",
      written: false,
      changed: {},
      contract: stack.sim.contract,
      restart: "systemctl restart boxmaker-inferproxy",
    });
    // Still refused: inferproxy reads its config only at start.
    const show = await stack.cli(["contract", "show", "--config", config]);
    expect(show.stdout).toContain(`config ${config} has template_sha256 `);
  });

  it("after a restart of inferproxy on that file, turns work and show says it matches", async () => {
    await stack.kill("inferproxy", "SIGTERM");
    // The restarted daemon reads the file accept wrote.
    stack.configs.inferproxy = JSON.parse(readFileSync(config, "utf8"));
    await stack.startDaemon("inferproxy");
    // Until loopd reaches the restarted inferproxy, show asks llama-server directly and says why.
    const viaStack = `config ${config}: the contract inferproxy holds the server to`;
    let show = await stack.cli(["contract", "show", "--config", config]);
    for (let i = 0; i < 150 && !show.stdout.includes(viaStack); i++) {
      if (show.stdout.includes("asked directly")) expect(show.stdout).not.toContain("the stack is not up");
      await new Promise((r) => setTimeout(r, 100));
      show = await stack.cli(["contract", "show", "--config", config]);
    }
    expect(show.code, show.stdout + show.stderr).toBe(0);
    expect(show.stdout).toContain("verdict: matches; completions are served");
    expect(show.stdout).toContain(`config ${config}: the contract inferproxy holds the server to`);
    stack.sim.enqueue({ content: "Adopted." });
    const run = await stack.cli(["run", "hello"]);
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(run.stdout).toContain("Adopted.");
    const st = await stack.cli(["status"]);
    expect(st.code).toBe(0);
    expect(st.stdout).not.toContain("to accept");
  });
});

describe("boxmaker contract before the stack is up (the install step)", () => {
  let tmp: ReturnType<typeof tempDir>;
  let sim: LlamaSim;
  let config: string;
  const noLoopd = () => ["--socket", join(tmp.dir, "no-loopd.sock")];

  beforeAll(async () => {
    tmp = tempDir("bxcu-");
    sim = await startLlamaSim({ socketPath: join(tmp.dir, "llama.sock") });
    config = join(tmp.dir, "inferproxy.json");
    writeFileSync(config, JSON.stringify({ upstream: { socket_path: sim.socketPath! }, log_level: "info" }));
  });
  afterAll(async () => {
    await sim?.close();
    tmp?.cleanup();
  });

  it("show asks llama-server itself and compares the file's contract (the defaults when it has none)", async () => {
    const show = await runCli([...noLoopd(), "contract", "show", "--config", config]);
    expect(show.code, show.stderr).toBe(0);
    expect((await runCli([...noLoopd(), "contract", "show", "--check", "--config", config])).code).toBe(1);
    expect(show.stdout).toContain(`llama-server at unix:${sim.socketPath!}, serving llama-sim.gguf (asked directly`);
    expect(show.stdout).toContain(`template_sha256  server    ${sim.contract.template_sha256}\n`);
    expect(show.stdout).toContain(`contract  ${LLAMA_CONTRACT.templateSha256}  ✗ differs`);
    expect(show.stdout).toContain(
      `\`boxmaker contract accept --config ${config} && systemctl restart boxmaker-inferproxy\``,
    );
    const j = JSON.parse((await runCli([...noLoopd(), "contract", "show", "--json", "--config", config])).stdout);
    expect(j).toMatchObject({ source: "llama-server", verdict: "differs", server: sim.contract });
  });

  it("accept writes the server's values; show then says it matches", async () => {
    const r = await runCli([...noLoopd(), "contract", "accept", "--config", config]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`wrote ${config}:`);
    // No probe before the stack is up: the entry has no verdict, and says so.
    expect(r.stdout).toContain("no probe verdict yet (the stack is not up");
    expect(JSON.parse(readFileSync(config, "utf8"))).toEqual({
      upstream: { socket_path: sim.socketPath! },
      log_level: "info",
      contracts: [{ model: "llama-sim.gguf", ...sim.contract, probe_verdict: "" }],
    });
    const show = await runCli([...noLoopd(), "contract", "show", "--config", config]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("verdict: matches");
    expect(show.stdout).toContain("(asked directly: the stack is not up)");
  });

  it("a server that is loading, or none at all: exit 6 saying why, and accept writes nothing", async () => {
    sim.setLoading(true);
    const loading = await runCli([...noLoopd(), "contract", "show", "--config", config]);
    expect(loading.code).toBe(6);
    expect(loading.stdout).toContain(`llama-server: llama-server at unix:${sim.socketPath!} is loading`);
    sim.setLoading(false);
    const gone = join(tmp.dir, "gone.json");
    writeFileSync(gone, JSON.stringify({ upstream: { socket_path: join(tmp.dir, "nothing.sock") } }));
    const before = readFileSync(gone, "utf8");
    const r = await runCli([...noLoopd(), "contract", "accept", "--config", gone]);
    expect(r.code).toBe(6);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(
      /nothing to accept: cannot reach loopd .*; and llama-server at unix:.*nothing\.sock: ENOENT/,
    );
    expect(readFileSync(gone, "utf8")).toBe(before);
  });
});
