// The NixOS module (nix/module.nix), evaluated with nixpkgs' lib.evalModules
// (test/nix/eval-module.nix) for a few real configurations, and compared
// directive by directive with the reviewed plain units in deploy/systemd: the
// units are the one source of truth, and every NixOS-specific difference is
// normalised in one place (NIXOS_SPECIFIC in ./units.ts). Bad option values
// must stop the evaluation with the module's own assertion messages.
import { describe, expect, it } from "vitest";
import { parseConfig, type ConfigSchema } from "@boxmaker/common";
import { configSchema as inferproxySchema } from "../../services/inferproxy/src/config.js";
import { brokerConfigSchema } from "../../services/brokerd/src/config.js";
import { loopdConfigSchema } from "../../services/loopd/src/config.js";
import { requires } from "../support/requirements.js";
import {
  differences,
  evalModule,
  NIXOS_SPECIFIC,
  normaliseNixos,
  normalisePlain,
  renderUnit,
  type Evaluation,
} from "./units.js";

const ok = requires("NixOS module evaluation", ["nix-instantiate"]);

const MODEL = "/var/lib/models/ornith-1.5-35b-a3b-Q4_K_M.gguf";
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

function evalError(boxmaker: unknown): string {
  try {
    evalModule(boxmaker);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("evaluation succeeded");
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
    const ev = evalModule({ enable: true, llamaServer: { model: MODEL } });
    expect(Object.keys(ev.services).sort()).toEqual([
      "boxmaker-brokerd",
      "boxmaker-inferproxy",
      "boxmaker-llama-server",
      "boxmaker-loopd",
    ]);
    expect(Object.keys(ev.targets)).toEqual(["boxmaker"]);
    expect(unitDiffs(ev, MODEL)).toEqual([]);
    expect(ev.users.users.boxmaker).toMatchObject({ isSystemUser: true, group: "boxmaker", home: "/var/lib/boxmaker" });
    expect(Object.keys(ev.users.groups)).toEqual(["boxmaker"]);
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
      llamaServer: { model: MODEL, extraFlags: ["--threads", "16"], gpuGroups: ["video", "render", "nvidia"] },
      workspaceRoots: ["/home/alice/src"],
    });
    expect(unitDiffs(ev, MODEL, ["--threads", "16"])).toEqual([
      "boxmaker-brokerd.service [Service] ReadWritePaths: deploy/systemd=(unset) module=/home/alice/src",
      "boxmaker-llama-server.service [Service] SupplementaryGroups: deploy/systemd=video render module=video render nvidia",
    ]);
    const exec = ev.services["boxmaker-llama-server"]!.serviceConfig!.ExecStart as string;
    expect(exec).toMatch(
      new RegExp(`-llama-cpp-0/bin/llama-server --host /run/boxmaker/llama.sock --model ${MODEL} .* --threads 16$`),
    );
    expect(configOf(ev, "brokerd").workspace_roots).toEqual(["/home/alice/src"]);
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
      "boxmaker-inferproxy.service [Unit] After: deploy/systemd=boxmaker-llama-server.service module=(unset)",
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
      llamaServer: { model: MODEL },
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
        { enable: true, llamaServer: { model: MODEL }, slots: 5 },
        "services.boxmaker.contextSize must divide evenly by slots.",
      ],
      [
        { enable: true, llamaServer: { model: MODEL }, upstream: { url: "http://127.0.0.1:8080" } },
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
      const err = evalError({ enable: true, slots: 5 });
      expect(err).toContain("- services.boxmaker.contextSize must divide evenly by slots.");
      expect(err).toContain("- services.boxmaker.llamaServer.model must be the absolute path");
    });

    it.each([
      [
        { enable: true, llamaServer: { model: MODEL }, slots: 0 },
        "services.boxmaker.slots' is not of type `positive integer, meaning >0'",
      ],
      [
        { enable: true, llamaServer: { model: MODEL }, contract: { templateSha256: "abc" } },
        "services.boxmaker.contract.templateSha256' is not of type",
      ],
      [
        { enable: true, llamaServer: { model: MODEL }, policy: { defaults: { write: "maybe" } } },
        "services.boxmaker.policy.defaults.write' is not of type",
      ],
      [
        { enable: true, llamaServer: { model: MODEL }, sampling: { topP: 1.5 } },
        "services.boxmaker.sampling.topP' is not of type",
      ],
    ])("type errors: %j", (boxmaker, message) => {
      expect(evalError(boxmaker)).toContain(`A definition for option \`${message}`);
    });

    it("an option the module does not have", () => {
      expect(evalError({ enable: true, llamaServer: { model: MODEL }, port: 8080 })).toContain(
        "The option `services.boxmaker.port' does not exist",
      );
    });
  });
});
