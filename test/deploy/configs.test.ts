import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig, type ConfigSchema } from "@boxmaker/common";
import { configSchema as inferproxySchema } from "../../services/inferproxy/src/config.js";
import { brokerConfigSchema } from "../../services/brokerd/src/config.js";
import { loopdConfigSchema } from "../../services/loopd/src/config.js";
import {
  brokerdConfig,
  checkOverrides,
  contractFromProps,
  inferproxyConfig,
  llamaServerArgs,
  loopdConfig,
  type StackSettings,
  type Upstream,
} from "../../services/cli/src/supervisor/configs.js";
import { layoutFor } from "../../services/cli/src/supervisor/layout.js";
import { planUp } from "../../services/cli/src/supervisor/up-options.js";
import { UsageError } from "../../services/cli/src/errors.js";
import { RestartPolicy, DEFAULT_RESTART_POLICY } from "../../services/cli/src/supervisor/restart-policy.js";
import { requires } from "../support/requirements.js";
import { repoRoot } from "../support/stack.js";
import { execStart, readUnit } from "./unit-file.js";

const schemas: Record<string, ConfigSchema<unknown>> = {
  inferproxy: inferproxySchema,
  brokerd: brokerConfigSchema,
  loopd: loopdConfigSchema,
};
const valid = (daemon: string, data: unknown) => parseConfig(schemas[daemon]!, data, daemon) as Record<string, unknown>;

const layout = layoutFor("/run/user/1000/boxmaker", "/home/a/.local/state/boxmaker");
const settings: StackSettings = { workspaceRoots: ["/home/a/src"], sandbox: { mode: "none" }, logLevel: "warn" };

describe("boxmaker up's generated configs", () => {
  it.each<Upstream>([
    { kind: "llama-sim" },
    { kind: "llama-server", bin: "/x/llama-server", model: "/m.gguf", extraArgs: [] },
    { kind: "socket", path: "/run/boxmaker/llama.sock" },
    { kind: "url", url: "http://127.0.0.1:8080" },
  ])("validate against the daemons' schemas ($kind)", (upstream) => {
    const inf = valid("inferproxy", inferproxyConfig(layout, upstream, settings));
    const brk = valid("brokerd", brokerdConfig(layout, settings));
    const lp = valid("loopd", loopdConfig(layout, upstream, settings));
    expect(lp.inferproxy_socket).toBe(inf.socket);
    expect(lp.brokerd_socket).toBe(brk.socket);
    expect(inf.upstream).toEqual(
      upstream.kind === "url"
        ? { url: upstream.url }
        : { socket_path: upstream.kind === "socket" ? upstream.path : layout.sockets.llama },
    );
    // Session logs, blobs and sockets stay out of the tools' reach even inside a workspace.
    expect(brk.protected_paths).toEqual(expect.arrayContaining([layout.stateDir, layout.runtimeDir]));
    // Parking needs a slot save path, which only a server `up` started is known to have.
    expect((lp.parking as { enabled: boolean }).enabled).toBe(
      upstream.kind === "llama-sim" || upstream.kind === "llama-server",
    );
  });

  it("leaves the production contract to inferproxy's defaults unless one is given", () => {
    const defaults = valid("inferproxy", inferproxyConfig(layout, { kind: "socket", path: "/s" }, settings));
    expect(defaults.contract).toEqual({
      template_sha256: "f55f52930aa8bf44ab5cb85f99370fcc3c56e9a85640b812086d5330bce5d86b",
      n_ctx_per_slot: 131072,
      total_slots: 3,
    });
    const props = { chat_template: "{{x}}", total_slots: 3, default_generation_settings: { n_ctx: 32768 } };
    const c = contractFromProps(props);
    expect(c.n_ctx_per_slot).toBe(32768);
    expect(
      valid("inferproxy", inferproxyConfig(layout, { kind: "llama-sim" }, { ...settings, contract: c })).contract,
    ).toEqual(c);
    expect(() => contractFromProps({ total_slots: 3 })).toThrow(/lacks chat_template/);
  });

  it("merges overrides but refuses ones that move the managed sockets", () => {
    const overrides = checkOverrides({
      brokerd: { policy: { rules: [{ tool: "read_file", effect: "allow" }] } },
      loopd: { budgets: { max_iterations: 3 } },
    });
    const brk = valid("brokerd", brokerdConfig(layout, { ...settings, overrides }));
    expect((brk.policy as { rules: unknown[] }).rules).toHaveLength(1);
    const lp = valid("loopd", loopdConfig(layout, { kind: "llama-sim" }, { ...settings, overrides }));
    expect((lp.budgets as { max_iterations: number; max_wall_ms: number }).max_iterations).toBe(3);
    expect(lp.socket).toBe(layout.sockets.loopd);
    expect(() => checkOverrides({ loopd: { socket: "/elsewhere" } })).toThrow("loopd.socket is set by boxmaker up");
    expect(() => checkOverrides({ llama: {} })).toThrow(/unknown daemon/);
  });

  it("plans flags into a layout and refuses what cannot work", () => {
    const host = { env: { XDG_RUNTIME_DIR: "/run/user/7", PATH: "" }, cwd: "/w", home: "/h", tmp: "/tmp", uid: 7 };
    const p = planUp({ llamaSim: true, sandbox: "none" }, host);
    expect(p.layout.sockets.loopd).toBe("/run/user/7/boxmaker/loopd.sock");
    expect(p.layout.stateDir).toBe("/h/.local/state/boxmaker");
    expect(p.settings.workspaceRoots).toEqual(["/w"]);
    expect(planUp({ llamaSim: true, sandbox: "none" }, { ...host, env: {} }).layout.runtimeDir).toBe("/tmp/boxmaker-7");
    expect(() => planUp({ llamaSim: true }, host)).toThrow(/bwrap .* not found/);
    expect(() => planUp({ llamaServer: "/bin/llama-server" }, host)).toThrow("--llama-server needs --model");
    expect(() => planUp({ llamaSim: true, sandbox: "none", runtimeDir: `/${"x".repeat(100)}` }, host)).toThrow(
      UsageError,
    );
    expect(() => planUp({ upstreamUrl: "unix:/x", sandbox: "none" }, host)).toThrow(/must start with http/);
    // A workspace inside Boxmaker's own source or state is refused with what to do instead.
    expect(() =>
      planUp({ llamaSim: true, sandbox: "none" }, { ...host, cwd: "/src/boxmaker/docs", installRoot: "/src/boxmaker" }),
    ).toThrow(
      /the workspace \/src\/boxmaker\/docs is inside Boxmaker's own source \(\/src\/boxmaker\).*pass --workspace DIR/,
    );
    expect(() => planUp({ llamaSim: true, sandbox: "none", workspace: ["/h/.local/state/boxmaker/x"] }, host)).toThrow(
      /state directory/,
    );
    // A home directory (or a root above one) would put the person's dotfiles in the agent's writable tree.
    expect(() => planUp({ llamaSim: true, sandbox: "none", workspace: ["/h"] }, host)).toThrow(
      /the workspace \/h is your home directory.*pass --workspace DIR/,
    );
    expect(() => planUp({ llamaSim: true, sandbox: "none", workspace: ["/"] }, host)).toThrow(/contains your home/);
    expect(
      planUp({ llamaSim: true, sandbox: "none", workspace: ["/h/project"] }, host).settings.workspaceRoots,
    ).toEqual(["/h/project"]);
  });
});

describe("the restart policy", () => {
  const o = { ...DEFAULT_RESTART_POLICY, initialDelayMs: 100, maxDelayMs: 1000, maxRestarts: 4, windowMs: 60_000 };
  const killed = { code: null, signal: "SIGKILL" };

  it("backs off exponentially up to the cap, then gives up within the window", () => {
    const p = new RestartPolicy(o);
    const delays = [0, 1, 2, 3].map((i) => {
      const d = p.decide(killed, 1000 + i);
      if (!d.restart) throw new Error(d.reason);
      return d.delayMs;
    });
    expect(delays).toEqual([100, 200, 400, 800]);
    const last = p.decide(killed, 1010);
    expect(last).toEqual({ restart: false, reason: "died 5 times within 1 min; giving up" });
  });

  it("forgets restarts older than the window, so a stable daemon starts again from the initial delay", () => {
    const p = new RestartPolicy(o);
    for (let i = 0; i < 4; i++) p.decide(killed, i);
    expect(p.decide(killed, 60_000 + 10)).toMatchObject({ restart: true, delayMs: 100, attempt: 1 });
  });

  it("caps the delay", () => {
    const p = new RestartPolicy({ ...o, maxRestarts: 10 });
    let d = p.decide(killed, 0);
    for (let i = 1; i < 8; i++) d = p.decide(killed, i);
    expect(d).toMatchObject({ restart: true, delayMs: 1000 });
  });

  it("never restarts on a config error (exit 2), whatever the history", () => {
    const p = new RestartPolicy(o);
    expect(p.decide({ code: 2, signal: null }, 0)).toMatchObject({ restart: false });
    expect(p.decide({ code: 1, signal: null }, 0)).toMatchObject({ restart: true });
  });
});

describe("the shipped example configs (deploy/config)", () => {
  it.each(["inferproxy", "brokerd", "loopd"])("%s.json validates and uses the units' paths", (d) => {
    const c = valid(d, JSON.parse(readFileSync(join(repoRoot, "deploy", "config", `${d}.json`), "utf8")));
    expect(c.socket).toBe(`/run/boxmaker/${d}.sock`);
    if (d !== "inferproxy") expect(c.state_dir).toBe(`/var/lib/boxmaker/${d === "brokerd" ? "broker" : "loopd"}`);
  });
});

/** The llama-server flags without the host-specific values (socket, model, slot dir). */
function contractFlags(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (["--host", "--model", "--slot-save-path"].includes(args[i]!)) i++;
    else out.push(args[i]!);
  }
  return out;
}

const haveNix = requires("nix/lib.nix evaluation", ["nix-instantiate"]);

function nixEval(expr: string): unknown {
  const r = spawnSync("nix-instantiate", ["--eval", "--strict", "--json", "-E", expr], {
    encoding: "utf8",
    cwd: repoRoot,
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

/** Option values as the module hands them to nix/lib.nix: every default filled, some set. */
const sampleCfg = `{
  llamaServer = { enable = true; model = "/m.gguf"; extraFlags = [ "--threads" "16" ]; };
  upstream = { socket = "/run/boxmaker/llama.sock"; url = null; };
  slots = 2; contextPerSlot = 131072; kvCacheType = "q8_0"; livenessWindowMs = null;
  slotMap = { main = 0; subagent = 1; scheduled = 1; };
  contract.templateSha256 = "f55f52930aa8bf44ab5cb85f99370fcc3c56e9a85640b812086d5330bce5d86b";
  sampling = { temperature = 0.6; topP = 0.95; topK = 20; minP = 0; };
  maxTokens = 8192;
  budgets = { maxIterations = 25; maxTotalTokens = 200000; maxWallMs = 600000; maxThinkingTokens = 8192; };
  workspaceRoots = [ "/home/a/src" ];
  policy = {
    defaults = { read = "allow"; write = "ask"; exec = "ask"; network = "ask"; };
    rules = [
      { name = null; tool = "run_command"; effect = "allow"; paths = null; commandPrefixes = [ "git status" ]; hosts = null; }
    ];
  };
  sandbox = { enable = true; network = false; };
  mcpServers = {
    fs = { transport = "stdio"; command = "mcp-fs"; args = [ ]; env = { }; cwd = null; url = null; headers = { }; risk = "read"; timeoutMs = 30000; };
    web = { transport = "http"; command = null; args = [ ]; env = { }; cwd = null; url = "https://mcp.example.org"; headers = { }; risk = "network"; timeoutMs = 5000; };
  };
  schedules = [ { id = "daily"; cron = "0 7 * * *"; prompt = "summarise the inbox"; } ];
  logLevel = "info";
  settings = { inferproxy = { }; brokerd = { result_cap_bytes = 4096; }; loopd = { compaction.threshold = 0.9; }; };
}`;

describe("the llama-server flags and the NixOS module's configs", () => {
  it("are the same in the plain unit and in boxmaker up", () => {
    const unit = execStart(readUnit("boxmaker-llama-server.service")).slice(1);
    const fromUp = llamaServerArgs(layout, "/m.gguf");
    expect(contractFlags(fromUp)).toEqual(contractFlags(unit.filter((a) => a !== "$LLAMA_EXTRA_ARGS")));
    expect(unit.at(-1)).toBe("$LLAMA_EXTRA_ARGS");
  });

  it.skipIf(!haveNix)("are the same in nix/lib.nix", () => {
    const nixArgs = nixEval(`(import ./nix/lib.nix).llamaServerArgs ${sampleCfg}`) as string[];
    expect(nixArgs.slice(-2)).toEqual(["--threads", "16"]);
    // The sample is the straylight layout (2 slots); only the two slot-derived values differ from up's default.
    const nixFlags = contractFlags(nixArgs.slice(0, -2));
    const upFlags = contractFlags(llamaServerArgs(layout, "/m.gguf"));
    expect(nixFlags[nixFlags.indexOf("--parallel") + 1]).toBe("2");
    expect(nixFlags[nixFlags.indexOf("--ctx-size") + 1]).toBe("262144");
    const without = (a: string[]) => a.filter((_, i) => !["--parallel", "--ctx-size"].includes(a[i - 1] ?? ""));
    expect(without(nixFlags)).toEqual(without(upFlags));
    expect(nixArgs[nixArgs.indexOf("--slot-save-path") + 1]).toBe("/var/lib/boxmaker/slots");
  });

  it.skipIf(!haveNix)("nix/lib.nix generates configs that validate against the daemons' schemas", () => {
    const all = nixEval(`let l = import ./nix/lib.nix; cfg = ${sampleCfg}; in {
      inferproxy = l.inferproxyConfig cfg;
      brokerd = l.brokerdConfig { inherit cfg; bwrapPath = "/nix/store/x-bubblewrap/bin/bwrap"; socatPath = "/nix/store/x-socat/bin/socat"; };
      loopd = l.loopdConfig cfg;
    }`) as Record<string, unknown>;
    const inf = valid("inferproxy", all.inferproxy);
    const brk = valid("brokerd", all.brokerd);
    const lp = valid("loopd", all.loopd);
    expect(inf.contract).toMatchObject({ n_ctx_per_slot: 131072, total_slots: 2 });
    expect(lp.slots).toEqual({ main: 0, subagent: 1, scheduled: 1 });
    expect(inf.upstream).toEqual({ socket_path: "/run/boxmaker/llama.sock" });
    expect(brk.result_cap_bytes).toBe(4096);
    expect(brk.protected_paths).toEqual(
      expect.arrayContaining(["/etc/boxmaker", "/var/lib/boxmaker", "/run/boxmaker"]),
    );
    expect(brk.mcp_servers).toMatchObject({ fs: { command: "mcp-fs" }, web: { url: "https://mcp.example.org" } });
    expect((brk.policy as { rules: Array<Record<string, unknown>> }).rules[0]).toEqual({
      tool: "run_command",
      effect: "allow",
      command_prefixes: ["git status"],
    });
    expect(lp.compaction as { threshold: number; keep_recent_messages: number }).toEqual({
      threshold: 0.9,
      keep_recent_messages: 8,
    });
    expect(lp.schedules).toEqual([{ id: "daily", cron: "0 7 * * *", prompt: "summarise the inbox" }]);
    expect(lp.inferproxy_socket).toBe(inf.socket);
    expect(lp.brokerd_socket).toBe(brk.socket);
  });
});
