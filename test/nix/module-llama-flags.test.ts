// What the NixOS module lets llama-server be told twice, or told something the
// rest of the stack does not follow, must stop `nixos-rebuild` at evaluation
// (or warn there), not surface hours later as refused completions.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/stack.js";
import { requires } from "../support/requirements.js";
import { evalError, evalModule, type Evaluation } from "./units.js";
import { templateSha256OfFile } from "../support/chat-template-hash.js";

const ok = requires("NixOS module evaluation", ["nix-instantiate"]);

const MODEL = "/var/lib/models/ornith-1.5-35b-a3b-Q4_K_M.gguf";
const VULKAN = { "llama-cpp": { vulkanSupport: true } };
const withModel = { model: MODEL, package: VULKAN };

/**
 * Every name llama.cpp's common/arg.cpp (the kit's 3.21.1 build) takes for a
 * setting the module makes: written out here from arg.cpp, not read from the
 * module, so a name the module forgets fails this test.
 */
const MODULE_SETTINGS: { names: string[]; env: string[] }[] = [
  { names: ["--host", "--port"], env: ["LLAMA_ARG_HOST", "LLAMA_ARG_PORT"] },
  { names: ["-m", "--model", "-hf", "--hf-repo"], env: ["LLAMA_ARG_MODEL"] },
  { names: ["-np", "--parallel"], env: ["LLAMA_ARG_N_PARALLEL"] },
  { names: ["-c", "--ctx-size"], env: ["LLAMA_ARG_CTX_SIZE"] },
  {
    names: ["-ctk", "--cache-type-k", "-ctv", "--cache-type-v"],
    env: ["LLAMA_ARG_CACHE_TYPE_K", "LLAMA_ARG_CACHE_TYPE_V"],
  },
  { names: ["-kvu", "--kv-unified", "-no-kvu", "--no-kv-unified"], env: ["LLAMA_ARG_KV_UNIFIED"] },
  { names: ["--jinja", "--no-jinja"], env: ["LLAMA_ARG_JINJA"] },
  { names: ["-fa", "--flash-attn"], env: ["LLAMA_ARG_FLASH_ATTN"] },
  { names: ["--mmap", "--no-mmap", "--load-mode"], env: ["LLAMA_ARG_MMAP", "LLAMA_ARG_LOAD_MODE"] },
  { names: ["-ngl", "--gpu-layers", "--n-gpu-layers"], env: ["LLAMA_ARG_N_GPU_LAYERS"] },
  { names: ["-cram", "--cache-ram", "--cache-idle-slots", "--no-cache-idle-slots"], env: ["LLAMA_ARG_CACHE_RAM"] },
  { names: ["--slot-save-path"], env: [] },
  {
    names: ["--chat-template-file", "--chat-template"],
    env: ["LLAMA_ARG_CHAT_TEMPLATE_FILE", "LLAMA_ARG_CHAT_TEMPLATE"],
  },
  { names: ["-a", "--alias"], env: ["LLAMA_ARG_ALIAS"] },
];
const CLASHING = MODULE_SETTINGS.flatMap((s) => s.names);
const CLASHING_ENV = MODULE_SETTINGS.flatMap((s) => s.env);
/** Flags the module leaves to the operator. */
const HARMLESS = [
  ["--threads", "16"],
  ["-t", "8"],
  ["--seed=3"],
  ["--cont-batching"],
  ["-b", "2048"],
  ["--ubatch-size", "512"],
];

const llamaUnit = (ev: Evaluation) => ev.services["boxmaker-llama-server"]!;
const execWords = (ev: Evaluation) =>
  (llamaUnit(ev).serviceConfig!.ExecStart as string).split(" ").map((w) => w.replace(/^'(.*)'$/, "$1"));
const inferproxyContract = (ev: Evaluation) =>
  (JSON.parse(ev.configFiles.inferproxy!.text) as { contract: { template_sha256: string } }).contract;

describe.skipIf(!ok)("the NixOS module: llama-server flags and options that disagree", () => {
  it("a flag the module sets, under any of its names and spellings, anywhere in extraFlags, is an evaluation error naming it", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CLASHING),
        fc.constantFrom("separate", "equals", "one word"),
        fc.array(fc.constantFrom(...HARMLESS), { maxLength: 3 }),
        fc.nat(3),
        (flag, form, harmless, at) => {
          const clash = form === "separate" ? [flag, "2"] : form === "equals" ? [`${flag}=2`] : [`${flag} 2`];
          const rest = harmless.flat();
          const i = Math.min(at, harmless.length) === 0 ? 0 : rest.length;
          const extraFlags = [...rest.slice(0, i), ...clash, ...rest.slice(i)];
          const err = evalError({ enable: true, llamaServer: { ...withModel, extraFlags } });
          expect(err).toContain("Failed assertions:");
          expect(err).toContain(`- services.boxmaker.llamaServer.extraFlags sets ${flag}, which comes from `);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("the operator's own flags pass, after the module's", () => {
    const extraFlags = HARMLESS.flat();
    const ev = evalModule({ enable: true, llamaServer: { ...withModel, extraFlags } });
    expect(execWords(ev).slice(-extraFlags.length)).toEqual(extraFlags);
  });

  it("llamaServer.environment reaches the unit; a LLAMA_ARG_ variable for a module setting is an error", () => {
    const ev = evalModule({
      enable: true,
      llamaServer: { ...withModel, environment: { GGML_VK_VISIBLE_DEVICES: "1" } },
    });
    expect(llamaUnit(ev).environment).toMatchObject({ GGML_VK_VISIBLE_DEVICES: "1" });
    for (const name of CLASHING_ENV) {
      const err = evalError({ enable: true, llamaServer: { ...withModel, environment: { [name]: "2" } } });
      expect(err).toContain(`- services.boxmaker.llamaServer.environment sets ${name}, which comes from `);
    }
  });

  it("--sleep-idle-seconds (flag or variable) evaluates with a warning that the caches go with it", () => {
    for (const llamaServer of [
      { ...withModel, extraFlags: ["--sleep-idle-seconds", "3600"] },
      { ...withModel, extraFlags: ["--sleep-idle-seconds=3600"] },
      { ...withModel, environment: { LLAMA_ARG_SLEEP_IDLE_SECONDS: "3600" } },
    ]) {
      const ev = evalModule({ enable: true, llamaServer });
      expect(ev.warnings.join("\n")).toContain("--sleep-idle-seconds: llama-server then unloads the model");
    }
    expect(evalModule({ enable: true, llamaServer: withModel }).warnings).toEqual([]);
  });

  describe("chatTemplateFile moves the contract's template_sha256", () => {
    it.each(["two-newlines.jinja", "crlf.jinja", "no-newline.jinja"])(
      "%s as a Nix path: the sha256 llama-server will report for it",
      (file) => {
        const path = join("test", "fixtures", "chat-templates", file);
        const ev = evalModule({ enable: true, llamaServer: { ...withModel, chatTemplateFile: { nixPath: path } } });
        const expected = templateSha256OfFile(readFileSync(join(repoRoot, path), "utf8"));
        expect(inferproxyContract(ev).template_sha256).toBe(expected);
        // Not the file's own bytes' hash where the last newline goes.
        if (file !== "no-newline.jinja")
          expect(expected).not.toBe(
            createHash("sha256")
              .update(readFileSync(join(repoRoot, path)))
              .digest("hex"),
          );
        expect(execWords(ev)).toContain("--chat-template-file");
      },
    );

    it("a file outside the store with no sha256 for the served model is an error; naming one passes", () => {
      const llamaServer = { ...withModel, chatTemplateFile: "/etc/boxmaker/chat-template.jinja" };
      expect(evalError({ enable: true, llamaServer })).toContain(
        "- services.boxmaker.llamaServer.chatTemplateFile /etc/boxmaker/chat-template.jinja is outside the Nix store",
      );
      const sha = "d".repeat(64);
      expect(
        inferproxyContract(evalModule({ enable: true, llamaServer, contract: { templateSha256: sha } }))
          .template_sha256,
      ).toBe(sha);
      evalModule({
        enable: true,
        llamaServer,
        contracts: [{ model: "ornith-1.5-35b-a3b-Q4_K_M.gguf", templateSha256: sha }],
      });
      // With an alias the entry is keyed by it: the file name's entry no longer applies.
      const aliased = { ...llamaServer, alias: "ornith" };
      expect(
        evalError({
          enable: true,
          llamaServer: aliased,
          contracts: [{ model: "ornith-1.5-35b-a3b-Q4_K_M.gguf", templateSha256: sha }],
        }),
      ).toContain('a contracts entry for model "ornith"');
      evalModule({ enable: true, llamaServer: aliased, contracts: [{ model: "ornith", templateSha256: sha }] });
    });
  });

  it("llamaServer.alias reaches llama-server as --alias", () => {
    const words = execWords(evalModule({ enable: true, llamaServer: { ...withModel, alias: "ornith" } }));
    expect(words.slice(words.indexOf("--alias"), words.indexOf("--alias") + 2)).toEqual(["--alias", "ornith"]);
  });

  describe("the package's GPU backend decides offload and devices", () => {
    it.each([
      [VULKAN, ["char-drm rw"]],
      [{ "llama-cpp": { rocmSupport: true } }, ["char-drm rw", "char-kfd rw"]],
      [
        { "llama-cpp": { cudaSupport: true } },
        ["char-nvidiactl rw", "char-nvidia-frontend rw", "char-nvidia-uvm rw", "char-nvidia-caps rw"],
      ],
    ])("%j: --n-gpu-layers 999 and DeviceAllow for its devices", (pkg, devices) => {
      const ev = evalModule({ enable: true, llamaServer: { model: MODEL, package: pkg } });
      const words = execWords(ev);
      expect(words[words.indexOf("--n-gpu-layers") + 1]).toBe("999");
      expect(llamaUnit(ev).serviceConfig!.DeviceAllow).toEqual(devices);
      expect(llamaUnit(ev).serviceConfig!.PrivateDevices).toBeUndefined();
      expect(ev.warnings).toEqual([]);
    });

    it("a CPU build: no --n-gpu-layers, no devices, and a warning that the model runs on the CPU", () => {
      const ev = evalModule({ enable: true, llamaServer: { model: MODEL, package: "llama-cpp" } });
      expect(execWords(ev)).not.toContain("--n-gpu-layers");
      expect(llamaUnit(ev).serviceConfig!.PrivateDevices).toBe(true);
      expect(llamaUnit(ev).serviceConfig!.DeviceAllow).toBeUndefined();
      expect(ev.warnings.join("\n")).toContain("has no GPU backend");
    });
  });

  it("llama-server has a writable cache directory for shader caches", () => {
    const unit = llamaUnit(evalModule({ enable: true, llamaServer: withModel }));
    expect(unit.serviceConfig!.CacheDirectory).toBe("boxmaker/llama-server");
    expect(unit.environment!.XDG_CACHE_HOME).toBe("/var/cache/boxmaker/llama-server");
  });
});

describe.skipIf(!ok)("the NixOS module: one spelling per setting", () => {
  it.each([
    [
      { budgets: { maxIterations: 5 } },
      { loopd: { budgets: { max_iterations: 9 } } },
      "budgets.maxIterations",
      "loopd.budgets.max_iterations",
    ],
    [{ maxTokens: 4096 }, { loopd: { max_tokens: 2048 } }, "maxTokens", "loopd.max_tokens"],
    [
      { sampling: { minP: 0.05 } },
      { inferproxy: { sampling: { min_p: 0.1 } } },
      "sampling.minP",
      "inferproxy.sampling.min_p",
    ],
    [{ logLevel: "debug" }, { brokerd: { log_level: "warn" } }, "logLevel", "brokerd.log_level"],
    [
      { workspaceRoots: ["/srv"] },
      { brokerd: { workspace_roots: ["/home"] } },
      "workspaceRoots",
      "brokerd.workspace_roots",
    ],
  ])("%j and settings %j: an error naming both", (option, settings, optName, key) => {
    const err = evalError({ enable: true, llamaServer: withModel, ...option, settings });
    expect(err).toContain(`- services.boxmaker.${optName} and services.boxmaker.settings.${key} both set`);
    // Either spelling alone is fine, and the value arrives.
    evalModule({ enable: true, llamaServer: withModel, ...option });
    const only = evalModule({ enable: true, llamaServer: withModel, settings });
    const [daemon, ...path] = key.split(".");
    let v: unknown = JSON.parse(only.configFiles[daemon!]!.text);
    for (const p of path) v = (v as Record<string, unknown>)[p];
    let want: unknown = settings;
    for (const p of [daemon!, ...path]) want = (want as Record<string, unknown>)[p];
    expect(v).toEqual(want);
  });

  it.each([
    [{ loopd: { slots: { main: 0, subagent: 1, scheduled: 2 } } }, "loopd.slots"],
    [{ loopd: { socket: "/tmp/l.sock" } }, "loopd.socket"],
    [{ inferproxy: { contract: { total_slots: 2 } } }, "inferproxy.contract.total_slots"],
    [{ inferproxy: { contract: { n_ctx_per_slot: 4096 } } }, "inferproxy.contract.n_ctx_per_slot"],
    [{ brokerd: { state_dir: "/tmp/b" } }, "brokerd.state_dir"],
  ])("settings %j for a key the module derives: an error", (settings, key) => {
    expect(evalError({ enable: true, llamaServer: withModel, settings })).toContain(
      `- services.boxmaker.settings.${key} is derived by the module from its options`,
    );
  });
});
