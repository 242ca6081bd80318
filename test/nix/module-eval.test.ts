// The NixOS module (nix/module.nix), evaluated with nixpkgs' lib.evalModules
// (test/nix/eval-module.nix) for a few real configurations, and compared
// directive by directive with the reviewed plain units in deploy/systemd: the
// units are the one source of truth, and every NixOS-specific difference is
// normalised in one place (NIXOS_SPECIFIC in ./units.ts). Bad option values
// must stop the evaluation with the module's own assertion messages.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { DEFAULT_KV_CACHE_TYPE, parseConfig, type ConfigSchema } from "@boxmaker/common";
import { configSchema as inferproxySchema } from "../../services/inferproxy/src/config.js";
import { brokerConfigSchema } from "../../services/brokerd/src/config.js";
import { loopdConfigSchema } from "../../services/loopd/src/config.js";
import { requires } from "../support/requirements.js";
import { daemonMain, repoRoot } from "../support/stack.js";
import { memoryPlan, type ModelFacts } from "../../services/cli/src/memory/memory-plan.js";
import { tempDir } from "../support/tmp.js";
import { execStart, readUnit } from "../deploy/unit-file.js";
import {
  differences,
  evalError,
  evalModule,
  NIXOS_SPECIFIC,
  normaliseNixos,
  normalisePlain,
  renderUnit,
  type Evaluation,
} from "./units.js";

const ok = requires("NixOS module evaluation", ["nix-instantiate"]);

const MODEL = "/var/lib/models/ornith-1.5-35b-a3b-Q4_K_M.gguf";
/** pkgs.llama-cpp.override { vulkanSupport = true; } (eval-module.nix's notation: JSON cannot hold a package). */
const VULKAN = { "llama-cpp": { vulkanSupport: true } };
/** The smallest configuration that evaluates with the module's own llama-server. */
const withModel = { model: MODEL, package: VULKAN };
const daemons = ["inferproxy", "brokerd", "loopd"] as const;
const schemas: Record<string, ConfigSchema<unknown>> = {
  inferproxy: inferproxySchema,
  brokerd: brokerConfigSchema,
  loopd: loopdConfigSchema,
};

/** The module's units against deploy/systemd: every directive that differs after NIXOS_SPECIFIC. */
function unitDiffs(ev: Evaluation, model: string | null, extraFlags: string[] = []): string[] {
  const units = [
    ...Object.entries(ev.services).map(([n, u]) => [`${n}.service`, u] as const),
    ...Object.entries(ev.targets).map(([n, u]) => [`${n}.target`, u] as const),
  ];
  return units.flatMap(([name, u]) =>
    differences(name, normalisePlain(name), normaliseNixos(renderUnit(u), ev, model, extraFlags)),
  );
}

/** The config file a daemon's ExecStart names, parsed and validated against the daemon's schema. */
function configOf(ev: Evaluation, d: (typeof daemons)[number]): Record<string, unknown> {
  const file = ev.configFiles[d]!;
  expect(ev.services[`boxmaker-${d}`]!.serviceConfig!.ExecStart).toBe(
    `${ev.package}/bin/boxmaker-${d} --config ${file.storePath}`,
  );
  return parseConfig(schemas[d]!, JSON.parse(file.text), d) as Record<string, unknown>;
}

/** llama-server's ExecStart as flag -> value (every flag the module writes takes at most one value). */
function llamaFlags(ev: Evaluation): Map<string, string> {
  const words = (ev.services["boxmaker-llama-server"]!.serviceConfig!.ExecStart as string).split(" ").slice(1);
  const flags = new Map<string, string>();
  for (let i = 0; i < words.length; i++) {
    const next = words[i + 1];
    if (next !== undefined && !next.startsWith("--")) flags.set(words[i]!, words[++i]!);
    else flags.set(words[i]!, "");
  }
  return flags;
}

/**
 * The three views of the slots agree: inferproxy expects the slot count and
 * per-slot context llama-server is started with, and every slot loopd pins a
 * role to exists there.
 */
function expectAgreement(ev: Evaluation): void {
  const f = llamaFlags(ev);
  const parallel = Number(f.get("--parallel"));
  const contract = configOf(ev, "inferproxy").contract as { n_ctx_per_slot: number; total_slots: number };
  expect(contract.total_slots).toBe(parallel);
  expect(contract.n_ctx_per_slot * parallel).toBe(Number(f.get("--ctx-size")));
  for (const slot of Object.values(configOf(ev, "loopd").slots as Record<string, number>)) {
    expect(slot).toBeGreaterThanOrEqual(0);
    expect(slot).toBeLessThan(parallel);
  }
}

describe.skipIf(!ok)("the NixOS module, evaluated", () => {
  it("lists its NixOS-specific normalisations in one place", () => {
    expect(NIXOS_SPECIFIC.length).toBeGreaterThan(0);
  });

  it("does nothing unless enabled", () => {
    const ev = evalModule({});
    expect(ev.services).toEqual({});
    expect(ev.targets).toEqual({});
    expect(ev.users.users).toEqual({});
    expect(ev.environment.systemPackages).toEqual([]);
  });

  it("defaults with a model: the same four units and target as deploy/systemd, directive by directive", () => {
    const ev = evalModule({ enable: true, llamaServer: withModel });
    expect(Object.keys(ev.services).sort()).toEqual([
      "boxmaker-brokerd",
      "boxmaker-inferproxy",
      "boxmaker-llama-server",
      "boxmaker-loopd",
    ]);
    expect(Object.keys(ev.targets)).toEqual(["boxmaker"]);
    expect(unitDiffs(ev, MODEL)).toEqual([]);
    expect(ev.users.users.boxmaker).toMatchObject({ isSystemUser: true, group: "boxmaker", home: "/var/lib/boxmaker" });
    // The GPU groups are declared too, so SupplementaryGroups= cannot name a group that does not exist.
    expect(Object.keys(ev.users.groups).sort()).toEqual(["boxmaker", "render", "video"]);
    expect(ev.environment.systemPackages).toEqual([ev.package]);
    expect(ev.environment.variables.BOXMAKER_SOCKET).toBe("/run/boxmaker/loopd.sock");
    expect(ev.warnings).toEqual([]);
    for (const d of daemons) configOf(ev, d);
    expect(configOf(ev, "loopd").parking).toEqual({ enabled: true });
    expect(configOf(ev, "inferproxy").upstream).toEqual({ socket_path: "/run/boxmaker/llama.sock" });
  });

  it("own llama-server with a model, extra flags, GPU groups and workspaces: only those directives differ", () => {
    const ev = evalModule({
      enable: true,
      llamaServer: { ...withModel, extraFlags: ["--threads", "16"], gpuGroups: ["video", "render", "nvidia"] },
      workspaceRoots: ["/home/alice/src"],
    });
    expect(unitDiffs(ev, MODEL, ["--threads", "16"])).toEqual([
      "boxmaker-brokerd.service [Service] ReadWritePaths: deploy/systemd=(unset) module=/home/alice/src",
      "boxmaker-llama-server.service [Service] SupplementaryGroups: deploy/systemd=video render module=video render nvidia",
    ]);
    const exec = ev.services["boxmaker-llama-server"]!.serviceConfig!.ExecStart as string;
    expect(exec).toMatch(
      new RegExp(
        `-llama-cpp-vulkan-0/bin/llama-server --host /run/boxmaker/llama.sock --model ${MODEL} .* --threads 16$`,
      ),
    );
    expect(configOf(ev, "brokerd").workspace_roots).toEqual(["/home/alice/src"]);
    expect(Object.keys(ev.users.groups).sort()).toEqual(["boxmaker", "nvidia", "render", "video"]);
  });

  it("an existing upstream: no llama-server unit, nothing waits for it, no parking", () => {
    const ev = evalModule({
      enable: true,
      llamaServer: { enable: false },
      upstream: { socket: "/run/llama/llama.sock" },
    });
    expect(ev.services["boxmaker-llama-server"]).toBeUndefined();
    // Compared with the plain units as they are (llama-server included) minus what needs the dedicated server.
    expect(unitDiffs(ev, null)).toEqual([
      "boxmaker-inferproxy.service [Unit] After: deploy/systemd=boxmaker-llama-server.service boxmaker.target module=boxmaker.target",
      "boxmaker-inferproxy.service [Unit] Wants: deploy/systemd=boxmaker-llama-server.service module=(unset)",
      "boxmaker.target [Unit] Wants: deploy/systemd=boxmaker-llama-server.service boxmaker-inferproxy.service boxmaker-brokerd.service boxmaker-loopd.service module=boxmaker-inferproxy.service boxmaker-brokerd.service boxmaker-loopd.service",
    ]);
    expect(configOf(ev, "inferproxy").upstream).toEqual({ socket_path: "/run/llama/llama.sock" });
    expect(configOf(ev, "loopd").parking).toEqual({ enabled: false });
  });

  it("an existing TCP upstream opens inferproxy's network as the plain unit's comment describes", () => {
    const ev = evalModule({ enable: true, llamaServer: { enable: false }, upstream: { url: "http://127.0.0.1:8080" } });
    expect(unitDiffs(ev, null).filter((d) => d.startsWith("boxmaker-inferproxy.service [Service]"))).toEqual([
      "boxmaker-inferproxy.service [Service] PrivateNetwork: deploy/systemd=yes module=(unset)",
      "boxmaker-inferproxy.service [Service] RestrictAddressFamilies: deploy/systemd=AF_UNIX module=AF_UNIX AF_INET AF_INET6",
    ]);
    expect(configOf(ev, "inferproxy").upstream).toEqual({ url: "http://127.0.0.1:8080" });
  });

  it("schedules, MCP servers and policy end up in the config files, units unchanged", () => {
    const ev = evalModule({
      enable: true,
      llamaServer: withModel,
      schedules: [{ id: "daily", cron: "0 7 * * 1-5", prompt: "summarise the inbox" }],
      mcpServers: {
        fs: {
          transport: "stdio",
          command: "/run/current-system/sw/bin/mcp-fs",
          args: ["--root", "/srv"],
          risk: "read",
        },
        web: { transport: "http", url: "https://mcp.example.org", timeoutMs: 5000, risk: "network" },
      },
      policy: { rules: [{ tool: "run_command", effect: "allow", commandPrefixes: ["git status"] }] },
      sandbox: { network: true },
      settings: { loopd: { compaction: { threshold: 0.9 } } },
    });
    expect(unitDiffs(ev, MODEL)).toEqual([]);
    const lp = configOf(ev, "loopd");
    expect(lp.schedules).toEqual([{ id: "daily", cron: "0 7 * * 1-5", prompt: "summarise the inbox" }]);
    expect(lp.compaction).toMatchObject({ threshold: 0.9 });
    const brk = configOf(ev, "brokerd");
    expect(Object.keys(brk.mcp_servers as object).sort()).toEqual(["fs", "web"]);
    expect(brk.mcp_servers).toMatchObject({
      fs: {
        transport: "stdio",
        command: "/run/current-system/sw/bin/mcp-fs",
        args: ["--root", "/srv"],
        risk: "read",
        timeout_ms: 30000,
      },
      web: { transport: "http", url: "https://mcp.example.org", risk: "network", timeout_ms: 5000 },
    });
    expect(brk.sandbox).toMatchObject({ mode: "bwrap", network: true });
    expect((brk.sandbox as { bwrap_path: string }).bwrap_path).toMatch(
      /^\/nix\/store\/[0-9a-z]{32}-bubblewrap-0\/bin\/bwrap$/,
    );
    expect((brk.policy as { rules: unknown[] }).rules).toEqual([
      { tool: "run_command", effect: "allow", command_prefixes: ["git status"] },
    ]);
  });

  describe("slots, context per slot and KV type drive llama-server, inferproxy and loopd together", () => {
    const straylight = { enable: true, llamaServer: withModel, contextPerSlot: 131072, kvCacheType: "q8_0" };

    it.each([
      [1, { main: 0, subagent: 0, scheduled: 0 }],
      [2, { main: 0, subagent: 1, scheduled: 1 }],
      [3, { main: 0, subagent: 1, scheduled: 2 }],
    ])("%i slot(s) of 131k, q8_0: the slot map, the contract and the server flags agree", (slots, map) => {
      const ev = evalModule({ ...straylight, slots });
      const f = llamaFlags(ev);
      expect(f.get("--parallel")).toBe(String(slots));
      expect(f.get("--ctx-size")).toBe(String(slots * 131072));
      expect([f.get("--cache-type-k"), f.get("--cache-type-v")]).toEqual(["q8_0", "q8_0"]);
      expect(configOf(ev, "inferproxy").contract).toMatchObject({ n_ctx_per_slot: 131072, total_slots: slots });
      expect(configOf(ev, "loopd").slots).toEqual(map);
      expectAgreement(ev);
      expect(ev.warnings).toEqual([]);
    });

    it("generated layouts: whatever the options, loopd pins only slots the server has and inferproxy expects what it was given", () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 6 }),
          fc.integer({ min: 1, max: 262_144 }),
          fc.constantFrom("f16", "q8_0", "q4_0", "bf16"),
          (slots, contextPerSlot, kvCacheType) => {
            const ev = evalModule({ enable: true, llamaServer: withModel, slots, contextPerSlot, kvCacheType });
            const f = llamaFlags(ev);
            expect(f.get("--cache-type-k")).toBe(kvCacheType);
            expect(f.get("--ctx-size")).toBe(String(slots * contextPerSlot));
            expectAgreement(ev);
            // Beyond three slots the map leaves slots unused, which the module says.
            expect(ev.warnings.length).toBe(slots > 3 ? 1 : 0);
          },
        ),
        { numRuns: 8 },
      );
    }, 120_000);

    it("more slots than roles: a warning names the slots no session uses", () => {
      const ev = evalModule({ ...straylight, slots: 5 });
      expect(ev.warnings).toEqual([
        "services.boxmaker.slots = 5, but slotMap uses only slot(s) 0, 1, 2: slot(s) 3, 4 hold KV memory no session uses.",
      ]);
    });

    it("slotMap overrides the derived map within the slots that exist", () => {
      const ev = evalModule({ ...straylight, slots: 2, slotMap: { subagent: 0 } });
      expect(configOf(ev, "loopd").slots).toEqual({ main: 0, subagent: 0, scheduled: 1 });
      expectAgreement(ev);
    });

    it("the default KV type is the stack's (q8_0), the same as the plain unit's", () => {
      const f = llamaFlags(evalModule({ enable: true, llamaServer: withModel }));
      expect([f.get("--cache-type-k"), f.get("--cache-type-v")]).toEqual([
        DEFAULT_KV_CACHE_TYPE,
        DEFAULT_KV_CACHE_TYPE,
      ]);
      const unit = execStart(readUnit("boxmaker-llama-server.service"));
      expect(unit[unit.indexOf("--cache-type-k") + 1]).toBe(DEFAULT_KV_CACHE_TYPE);
    });
  });

  describe("more than one model: the contract table and a corrected chat template", () => {
    it("contracts become inferproxy's table (each entry checked by its schema); chatTemplateFile reaches llama-server as --chat-template-file", () => {
      const laguna = { model: "laguna-s-2.1-Q4_K_M.gguf", templateSha256: "a".repeat(64), probeVerdict: "ok" };
      const nemo = { model: "nemo", templateSha256: "b".repeat(64), nCtxPerSlot: 65536, totalSlots: 2 };
      const ev = evalModule({
        enable: true,
        slots: 2,
        llamaServer: { ...withModel, chatTemplateFile: "/etc/boxmaker/chat-template.jinja" },
        // The served model's own entry names the file's sha256 (a file outside the store has none at evaluation).
        contracts: [laguna, nemo, { model: "ornith-1.5-35b-a3b-Q4_K_M.gguf", templateSha256: "c".repeat(64) }],
      });
      expect(llamaFlags(ev).get("--chat-template-file")).toBe("/etc/boxmaker/chat-template.jinja");
      const cfg = configOf(ev, "inferproxy");
      expect(cfg.contracts).toEqual([
        {
          model: laguna.model,
          template_sha256: laguna.templateSha256,
          n_ctx_per_slot: 131072,
          total_slots: 2,
          probe_verdict: "ok",
        },
        {
          model: "nemo",
          template_sha256: nemo.templateSha256,
          n_ctx_per_slot: 65536,
          total_slots: 2,
          probe_verdict: "",
        },
        {
          model: "ornith-1.5-35b-a3b-Q4_K_M.gguf",
          template_sha256: "c".repeat(64),
          n_ctx_per_slot: 131072,
          total_slots: 2,
          probe_verdict: "",
        },
      ]);
      expect(ev.warnings).toEqual([]);
      // Without the options: no flag, an empty table.
      const plain = evalModule({ enable: true, llamaServer: withModel });
      expect(llamaFlags(plain).has("--chat-template-file")).toBe(false);
      expect(configOf(plain, "inferproxy").contracts).toEqual([]);
    });
  });

  describe("the memory plan: modelFacts against memoryBudgetMiB, computed as `boxmaker memory-plan` does", () => {
    // The 30B-A3B shape: 48 layers, 4 KV heads of 128, 17.3 GB of weights.
    const facts = { layers: 48, kvHeads: 4, headSizeK: 128, headSizeV: 128, weightsBytes: 17_300_000_000 };
    const tsFacts = (f: typeof facts | (Omit<typeof facts, "kvHeads"> & { kvHeads: number[] })): ModelFacts => ({
      name: "",
      architecture: "x",
      layers: f.layers,
      kvHeads: Array.isArray(f.kvHeads) ? f.kvHeads : Array(f.layers).fill(f.kvHeads),
      headSizeK: f.headSizeK,
      headSizeV: f.headSizeV,
      weightsBytes: f.weightsBytes,
      trainedContext: 0,
      kvUnknown: "",
      notes: [],
    });

    it("over the budget: a warning with the figures, what one slot costs and what to change", () => {
      const ev = evalModule({
        enable: true,
        llamaServer: { ...withModel, modelFacts: facts },
        memoryBudgetMiB: 32 * 1024,
      });
      expect(ev.warnings).toContain(
        "services.boxmaker: llama-server needs 37.24 GiB (weights 16.11 GiB + KV cache 19.13 GiB for 3 × 131072 tokens of q8_0 + compute margin 2.00 GiB), 5.24 GiB over memoryBudgetMiB (32.00 GiB); each slot's context costs 6.38 GiB: fewer slots, a smaller contextPerSlot or kvCacheType.",
      );
      const fits = evalModule({
        enable: true,
        llamaServer: { ...withModel, modelFacts: facts },
        memoryBudgetMiB: 32 * 1024,
        slots: 2,
      });
      expect(fits.warnings.filter((w) => w.includes("memoryBudgetMiB"))).toEqual([]);
      const unchecked = evalModule({ enable: true, llamaServer: withModel, memoryBudgetMiB: 32 * 1024 });
      expect(unchecked.warnings.join("\n")).toContain("memoryBudgetMiB is set but llamaServer.modelFacts is not");
    });

    it("a KV type llama-server would refuse for the model's heads fails the evaluation", () => {
      const err = evalError({
        enable: true,
        llamaServer: { ...withModel, modelFacts: { ...facts, headSizeK: 16, headSizeV: 16 } },
      });
      expect(err).toContain(
        "- services.boxmaker: llama-server refuses kvCacheType q8_0 for this model: its K head size 16 is not a multiple of q8_0's block of 32",
      );
      evalModule({
        enable: true,
        kvCacheType: "f16",
        llamaServer: { ...withModel, modelFacts: { ...facts, headSizeK: 16, headSizeV: 16 } },
      });
    });

    it("Nix's plan and the CLI's agree, for generated models and layouts", () => {
      fc.assert(
        fc.property(
          fc.record({
            layers: fc.integer({ min: 1, max: 96 }),
            heads: fc.oneof(
              fc.integer({ min: 1, max: 16 }),
              fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 1, maxLength: 96 }),
            ),
            head: fc.constantFrom(64, 96, 128, 256),
            weightsBytes: fc.integer({ min: 0, max: 2 ** 40 }),
            slots: fc.integer({ min: 1, max: 4 }),
            contextPerSlot: fc.integer({ min: 1, max: 262_144 }),
            kvCacheType: fc.constantFrom(
              ...(["f32", "f16", "bf16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "iq4_nl"] as const),
            ),
            computeMarginMiB: fc.integer({ min: 0, max: 8192 }),
          }),
          (g) => {
            const kvHeads = Array.isArray(g.heads) ? g.heads : g.heads;
            const layers = Array.isArray(g.heads) ? g.heads.length : g.layers;
            const f = { layers, kvHeads, headSizeK: g.head, headSizeV: g.head, weightsBytes: g.weightsBytes };
            const expr = `(import ${repoRoot}/nix/lib.nix).memoryPlan (builtins.fromJSON ''${JSON.stringify({ facts: f, slots: g.slots, contextPerSlot: g.contextPerSlot, kvCacheType: g.kvCacheType, computeMarginMiB: g.computeMarginMiB })}'')`;
            const r = spawnSync("nix-instantiate", ["--eval", "--strict", "--json", "-E", expr], { encoding: "utf8" });
            expect(r.status, r.stderr).toBe(0);
            const nix = JSON.parse(r.stdout);
            const ts = memoryPlan(tsFacts(f as never), {
              slots: g.slots,
              ctxPerSlot: g.contextPerSlot,
              kvTypeK: g.kvCacheType,
              kvTypeV: g.kvCacheType,
              computeMarginBytes: g.computeMarginMiB * 1024 ** 2,
              capBytes: 0,
            });
            expect({ cells: nix.cellsPerSlot, kv: nix.kvBytes, total: nix.totalBytes }).toEqual({
              cells: ts.cellsPerSlot,
              kv: ts.kvBytes,
              total: ts.totalBytes,
            });
          },
        ),
        { numRuns: 25 },
      );
    });
  });

  it("sandbox.netProxy.enable turns on brokerd's proxy for commands, with socat from nixpkgs as the bridge", () => {
    const proxy = (ev: Evaluation) =>
      (configOf(ev, "brokerd").sandbox as { net_proxy: { enabled: boolean; socat_path: string } }).net_proxy;
    const on = proxy(evalModule({ enable: true, llamaServer: withModel, sandbox: { netProxy: { enable: true } } }));
    expect(on.enabled).toBe(true);
    expect(on.socat_path).toMatch(/^\/nix\/store\/[^/]+-socat-0\/bin\/socat$/);
    expect(proxy(evalModule({ enable: true, llamaServer: withModel })).enabled).toBe(false);
  });

  describe("the llama-server package is the operator's choice", () => {
    it.each([
      [{ "llama-cpp": { vulkanSupport: true } }, "llama-cpp-vulkan-0"],
      [{ "llama-cpp": { cudaSupport: true } }, "llama-cpp-cuda-0"],
      [{ "llama-cpp": { rocmSupport: true } }, "llama-cpp-rocm-0"],
      ["llama-cpp", "llama-cpp-0"],
    ])("%j reaches ExecStart", (pkg, name) => {
      const ev = evalModule({ enable: true, llamaServer: { model: MODEL, package: pkg } });
      expect(ev.services["boxmaker-llama-server"]!.serviceConfig!.ExecStart).toMatch(
        new RegExp(`^/nix/store/[0-9a-z]{32}-${name}/bin/llama-server `),
      );
    });

    it("not needed for an external server", () => {
      const ev = evalModule({ enable: true, llamaServer: { enable: false } });
      expect(ev.services["boxmaker-llama-server"]).toBeUndefined();
    });
  });

  it("livenessWindowMs feeds inferproxy's liveness_timeout_ms; unset, inferproxy's own default applies", () => {
    const set = evalModule({ enable: true, llamaServer: withModel, livenessWindowMs: 15000 });
    expect(configOf(set, "inferproxy").liveness_timeout_ms).toBe(15000);
    const unset = evalModule({ enable: true, llamaServer: withModel });
    expect(JSON.parse(unset.configFiles.inferproxy!.text)).not.toHaveProperty("liveness_timeout_ms");
    expect(configOf(unset, "inferproxy").liveness_timeout_ms).toBe(
      (parseConfig(inferproxySchema, {}, "inferproxy") as { liveness_timeout_ms: number }).liveness_timeout_ms,
    );
  });

  it("retention options feed brokerd's checkpoints and proposals keys and loopd's session_logs; unset, the daemons' defaults apply", () => {
    const set = evalModule({
      enable: true,
      llamaServer: withModel,
      retention: { checkpointDays: 7, checkpointSessions: 50, decidedProposalDays: 0 },
    });
    const b = configOf(set, "brokerd");
    expect(b.checkpoints).toEqual({ keep_days: 7, keep_sessions: 50 });
    // One left null is brokerd's own default; 0 (keep any age) is a value, not "unset".
    expect(b.proposals).toEqual({ keep_decided_days: 0, keep_decided_max: 10_000 });
    const unset = evalModule({ enable: true, llamaServer: withModel });
    const text = JSON.parse(unset.configFiles.brokerd!.text) as Record<string, unknown>;
    expect(text).not.toHaveProperty("checkpoints");
    expect(text).not.toHaveProperty("proposals");
    expect(configOf(unset, "brokerd").checkpoints).toEqual({ keep_days: 30, keep_sessions: 1_000 });
    expect(JSON.parse(unset.configFiles.loopd!.text)).not.toHaveProperty("session_logs");
    expect(configOf(unset, "loopd").session_logs).toEqual({
      compress_archived_after_days: 30,
      compress_idle_after_days: 90,
    });
    const logs = evalModule({
      enable: true,
      llamaServer: withModel,
      retention: { archivedLogDays: 3, idleLogDays: 0 },
    });
    expect(configOf(logs, "loopd").session_logs).toEqual({
      compress_archived_after_days: 3,
      compress_idle_after_days: 0,
    });
  });

  it("toolsUser: brokerd (and every tool) acts as the operator's account, the other daemons stay boxmaker", () => {
    const mine = evalModule({
      enable: true,
      llamaServer: withModel,
      toolsUser: "alice",
      workspaceRoots: ["/home/alice/src"],
    });
    const b = mine.services["boxmaker-brokerd"]!.serviceConfig!;
    expect(b.User).toBe("alice");
    expect(b.Group).toBe("boxmaker");
    expect(b.SupplementaryGroups).toEqual(["boxmaker"]);
    expect(b.UMask).toBe("0022");
    expect(b.ReadWritePaths).toEqual(["/home/alice/src"]);
    for (const d of ["loopd", "inferproxy"])
      expect(mine.services[`boxmaker-${d}`]!.serviceConfig!.User).toBe("boxmaker");
    const shared = evalModule({ enable: true, llamaServer: withModel });
    expect(shared.services["boxmaker-brokerd"]!.serviceConfig!.User).toBe("boxmaker");
    expect(shared.services["boxmaker-brokerd"]!.serviceConfig!.UMask).toBe("0007");
  });

  describe("refuses bad option values with the module's own messages", () => {
    it.each([
      [{ enable: true }, "services.boxmaker.llamaServer.model must be the absolute path of a GGUF file"],
      [
        { enable: true, llamaServer: { model: "" } },
        "services.boxmaker.llamaServer.model must be the absolute path of a GGUF file",
      ],
      [
        { enable: true, llamaServer: { model: "models/m.gguf" } },
        "services.boxmaker.llamaServer.model must be the absolute path of a GGUF file",
      ],
      [
        { enable: true, llamaServer: { model: MODEL } },
        "services.boxmaker.llamaServer.package must be chosen: a llama.cpp build with your GPU's backend, e.g. pkgs.llama-cpp.override { vulkanSupport = true; }",
      ],
      [
        { enable: true, llamaServer: withModel, slots: 0 },
        "services.boxmaker.slots must be at least 1: loopd needs a slot for the main session.",
      ],
      [
        { enable: true, llamaServer: withModel, slots: 2, slotMap: { scheduled: 2 } },
        "services.boxmaker.slotMap.scheduled is slot 2, but llama-server has 2 slot(s) (0..1).",
      ],
      [
        { enable: true, llamaServer: withModel, slots: 1, slotMap: { main: 1 } },
        "services.boxmaker.slotMap.main is slot 1, but llama-server has 1 slot(s) (0..0).",
      ],
      [
        { enable: true, llamaServer: withModel, upstream: { url: "http://127.0.0.1:8080" } },
        "services.boxmaker.upstream.url is for an external server: set llamaServer.enable = false.",
      ],
      [
        { enable: true, llamaServer: { enable: false }, upstream: { url: "unix:/run/llama.sock" } },
        "services.boxmaker.upstream.url must start with http:// or https://.",
      ],
      [
        { enable: true, llamaServer: { enable: false }, upstream: { socket: "llama.sock" } },
        "services.boxmaker.upstream.socket must be an absolute path.",
      ],
    ])("%j", (boxmaker, message) => {
      const err = evalError(boxmaker);
      expect(err).toContain("Failed assertions:");
      expect(err).toContain(`- ${message}`);
    });

    it("reports every failed assertion at once, as NixOS does", () => {
      const err = evalError({ enable: true, slots: 0 });
      expect(err).toContain("- services.boxmaker.slots must be at least 1");
      expect(err).toContain("- services.boxmaker.llamaServer.model must be the absolute path");
      expect(err).toContain("- services.boxmaker.llamaServer.package must be chosen");
    });

    it("the removed contextSize says what replaces it", () => {
      const err = evalError({ enable: true, llamaServer: withModel, contextSize: 262144 });
      expect(err).toContain("services.boxmaker.contextSize");
      expect(err).toContain("Set services.boxmaker.contextPerSlot instead");
    });

    it.each([
      [
        { enable: true, llamaServer: withModel, slots: -1 },
        "services.boxmaker.slots' is not of type `unsigned integer, meaning >=0'",
      ],
      [
        { enable: true, llamaServer: withModel, contextPerSlot: 0 },
        "services.boxmaker.contextPerSlot' is not of type `positive integer, meaning >0'",
      ],
      [{ enable: true, llamaServer: withModel, kvCacheType: "q9_0" }, "services.boxmaker.kvCacheType' is not of type"],
      [
        { enable: true, llamaServer: withModel, contract: { templateSha256: "abc" } },
        "services.boxmaker.contract.templateSha256' is not of type",
      ],
      [
        { enable: true, llamaServer: withModel, policy: { defaults: { write: "maybe" } } },
        "services.boxmaker.policy.defaults.write' is not of type",
      ],
      [
        { enable: true, llamaServer: withModel, sampling: { topP: 1.5 } },
        "services.boxmaker.sampling.topP' is not of type",
      ],
    ])("type errors: %j", (boxmaker, message) => {
      expect(evalError(boxmaker)).toContain(`A definition for option \`${message}`);
    });

    describe("settings the daemon would refuse fail the build, with the daemon's own line", () => {
      const tmp = tempDir("bxnix-check-");
      afterAll(() => tmp.cleanup());
      /** What the build step runs: the daemon's --check-config on the file the module renders for it. */
      const checkAsBuilt = (ev: Evaluation, d: (typeof daemons)[number]) => {
        const file = ev.configFiles[d]!;
        expect(file.build).toContain(`${ev.package}/bin/boxmaker-${d} --check-config ${file.unchecked}`);
        expect(file.build).toContain(`cp ${file.unchecked} $out`);
        const path = join(tmp.dir, `${d}-${Math.random().toString(36).slice(2)}.json`);
        writeFileSync(path, file.text);
        const r = spawnSync(process.execPath, [daemonMain(d), "--check-config", path], { encoding: "utf8" });
        return { status: r.status, out: r.stdout, err: r.stderr.replaceAll(path, "<file>") };
      };

      it("what the module renders from its options passes every daemon's check", () => {
        for (const boxmaker of [
          { enable: true, llamaServer: withModel },
          {
            enable: true,
            llamaServer: withModel,
            slots: 2,
            schedules: [{ id: "daily", cron: "0 7 * * 1-5", prompt: "summarise the inbox" }],
            policy: { rules: [{ tool: "run_command", effect: "allow", commandPrefixes: ["git status"] }] },
            sandbox: { network: true, netProxy: { enable: true } },
          },
          { enable: true, llamaServer: { enable: false }, upstream: { url: "http://127.0.0.1:8080" } },
        ]) {
          const ev = evalModule(boxmaker);
          for (const d of daemons)
            expect(checkAsBuilt(ev, d), `${d} of ${JSON.stringify(boxmaker)}`).toMatchObject({ status: 0, err: "" });
        }
      });

      it.each([
        ["loopd", { loopd: { budgetz: { max_iterations: 3 } } }, 'key "budgetz" is not a known setting'],
        ["loopd", { loopd: { budgets: { max_iterationz: 3 } } }, 'key "budgets.max_iterationz" is not a known setting'],
        [
          "loopd",
          { loopd: { schedules: [{ id: "hourly", cron: "61 * * * *", prompt: "x" }] } },
          'key "schedules.0.cron": not a cron expression: "61 * * * *"',
        ],
        [
          "loopd",
          { loopd: { schedules: [{ id: "weekly", cron: "0 7 * *", prompt: "x" }] } },
          'key "schedules.0.cron": not a cron expression: "0 7 * *" has 4 fields',
        ],
        [
          "loopd",
          {
            loopd: {
              schedules: [
                { id: "a", cron: "0 7 * * *", prompt: "x" },
                { id: "a", cron: "0 8 * * *", prompt: "y" },
              ],
            },
          },
          'key "schedules.1.id" is "a", the id of schedules.0 too',
        ],
        ["brokerd", { brokerd: { limitz: {} } }, 'key "limitz" is not a known setting'],
        ["brokerd", { brokerd: { policy: { rules: [{ tool: "rn_command", effect: "allow" }] } } }, "rn_command"],
        ["inferproxy", { inferproxy: { liveness_timeout_ms: -5 } }, 'key "liveness_timeout_ms"'],
      ] as const)("%s: %j", (d, settings, line) => {
        const ev = evalModule({ enable: true, llamaServer: withModel, settings });
        const r = checkAsBuilt(ev, d);
        expect(r.status, r.err).toBe(2);
        expect(r.err).toContain(line);
        // One line, as systemd and the build log show it.
        expect(r.err.trimEnd().split("\n")).toHaveLength(1);
      });
    });

    it("an option the module does not have", () => {
      expect(evalError({ enable: true, llamaServer: withModel, port: 8080 })).toContain(
        "The option `services.boxmaker.port' does not exist",
      );
    });
  });
});
