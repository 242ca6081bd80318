import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "@boxmaker/common";
import { configSchema, upstreamLabel } from "../src/config.js";

describe("config schema", () => {
  it("fills production defaults from an empty file", () => {
    const c = parseConfig(configSchema, {});
    expect(c.socket).toBe("/run/boxmaker/inferproxy.sock");
    expect(c.upstream).toEqual({ socket_path: "/run/boxmaker/llama.sock" });
    expect(c.sampling).toEqual({ temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0 });
    expect(c.contract).toEqual({
      template_sha256: "f55f52930aa8bf44ab5cb85f99370fcc3c56e9a85640b812086d5330bce5d86b",
      n_ctx_per_slot: 131072,
      total_slots: 3,
    });
    expect(c.liveness_timeout_ms).toBe(5000);
    expect(upstreamLabel(c.upstream)).toBe("unix:/run/boxmaker/llama.sock");
  });

  it("accepts a TCP URL instead of the socket for development", () => {
    const c = parseConfig(configSchema, { upstream: { url: "http://127.0.0.1:8080" }, sampling: { temperature: 1 } });
    expect(upstreamLabel(c.upstream)).toBe("http://127.0.0.1:8080");
    expect(c.sampling).toEqual({ temperature: 1, top_p: 0.95, top_k: 20, min_p: 0 });
  });

  it.each([
    [{ sampling: { temprature: 1 } }, /"sampling\.temprature" is not a known setting/],
    [{ max_tokens: "a" }, /"max_tokens" must be integer/],
    [{ contract: { template_sha256: "zz" } }, /"contract\.template_sha256"/],
    [{ upstream: { url: "http://x:1", socket_path: "/a" } }, /"upstream"/],
    // A null reached the connector and failed at the first request; it is a config error now.
    [{ upstream: { socket_path: null } }, /"upstream\.socket_path" must be string/],
    [{ upstream: { url: null } }, /"upstream\.url" must be string/],
    [{ log_level: "loud" }, /"log_level"/],
  ])("rejects %j with one line naming the key", (bad, msg) => {
    const err = (() => {
      try {
        parseConfig(configSchema, bad);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(msg);
    expect((err as Error).message).not.toContain("\n");
  });
});
