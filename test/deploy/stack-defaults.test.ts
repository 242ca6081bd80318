// One home per fact: the values every part of a stack must agree on live in
// services/common/src/stack-defaults.ts. This file checks the places that
// cannot import it (the Nix module's JSON copy, the shipped deploy/ files) and
// the daemons' config schemas, which must take their defaults from it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  DEFAULT_BUDGETS,
  DEFAULT_DIRS,
  DEFAULT_SAMPLING,
  DEFAULT_SOCKETS,
  LLAMA_CONTRACT,
  MAX_TOKENS_PER_REQUEST,
  parseConfig,
  stackDefaultsJson,
  type ConfigSchema,
} from "@boxmaker/common";
import { configSchema as inferproxySchema } from "../../services/inferproxy/src/config.js";
import { brokerConfigSchema } from "../../services/brokerd/src/config.js";
import { loopdConfigSchema } from "../../services/loopd/src/config.js";
import { repoRoot } from "../support/stack.js";

const deployConfig = (d: string) =>
  JSON.parse(readFileSync(join(repoRoot, "deploy", "config", `${d}.json`), "utf8")) as Record<string, unknown>;
const defaultsOf = (schema: ConfigSchema<unknown>, d: string) =>
  parseConfig(schema, {}, d) as Record<string, Record<string, unknown>>;

describe("the stack defaults", () => {
  it("nix/stack-defaults.json is generated from stack-defaults.ts (run `npm run gen:stack-defaults` after a change)", () => {
    expect(readFileSync(join(repoRoot, "nix", "stack-defaults.json"), "utf8")).toBe(stackDefaultsJson());
  });

  it("the shipped deploy/config files use the default sockets and state dirs", () => {
    expect(deployConfig("inferproxy")).toMatchObject({
      socket: DEFAULT_SOCKETS.inferproxy,
      upstream: { socket_path: DEFAULT_SOCKETS.llama },
    });
    expect(deployConfig("brokerd")).toMatchObject({
      socket: DEFAULT_SOCKETS.brokerd,
      state_dir: DEFAULT_DIRS.brokerdState,
    });
    expect(deployConfig("loopd")).toMatchObject({
      socket: DEFAULT_SOCKETS.loopd,
      state_dir: DEFAULT_DIRS.loopdState,
      inferproxy_socket: DEFAULT_SOCKETS.inferproxy,
      brokerd_socket: DEFAULT_SOCKETS.brokerd,
    });
  });

  it("the llama-server unit serves on the default socket and saves slots in the default dir", () => {
    const unit = readFileSync(join(repoRoot, "deploy", "systemd", "boxmaker-llama-server.service"), "utf8");
    expect(unit).toContain(`--host ${DEFAULT_SOCKETS.llama}`);
    expect(unit).toContain(`--slot-save-path ${DEFAULT_DIRS.slotSave}`);
    expect(unit).toContain(`--parallel ${LLAMA_CONTRACT.slots}`);
    expect(unit).toContain(`--ctx-size ${LLAMA_CONTRACT.contextSize}`);
  });

  it("the daemons' config schemas take their defaults from it", () => {
    const inf = defaultsOf(inferproxySchema, "inferproxy");
    expect(inf.socket).toBe(DEFAULT_SOCKETS.inferproxy);
    expect(inf.upstream).toEqual({ socket_path: DEFAULT_SOCKETS.llama });
    expect(inf.sampling).toEqual(DEFAULT_SAMPLING);
    expect(inf.max_tokens).toBe(MAX_TOKENS_PER_REQUEST);
    expect(inf.contract).toEqual({
      template_sha256: LLAMA_CONTRACT.templateSha256,
      n_ctx_per_slot: LLAMA_CONTRACT.nCtxPerSlot,
      total_slots: LLAMA_CONTRACT.slots,
    });
    const brk = defaultsOf(brokerConfigSchema, "brokerd");
    expect(brk.socket).toBe(DEFAULT_SOCKETS.brokerd);
    expect(brk.state_dir).toBe(DEFAULT_DIRS.brokerdState);
    const lp = defaultsOf(loopdConfigSchema, "loopd");
    expect(lp.socket).toBe(DEFAULT_SOCKETS.loopd);
    expect(lp.state_dir).toBe(DEFAULT_DIRS.loopdState);
    expect(lp.inferproxy_socket).toBe(DEFAULT_SOCKETS.inferproxy);
    expect(lp.brokerd_socket).toBe(DEFAULT_SOCKETS.brokerd);
    expect(lp.max_tokens).toBe(MAX_TOKENS_PER_REQUEST);
    expect(lp.budgets).toEqual(DEFAULT_BUDGETS);
  });

  it("splits the context evenly over the slots", () => {
    expect(LLAMA_CONTRACT.nCtxPerSlot * LLAMA_CONTRACT.slots).toBe(LLAMA_CONTRACT.contextSize);
  });
});
