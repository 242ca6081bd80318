import { describe, expect, it } from "vitest";
import { evaluateProps, templateSha256, type Props } from "../src/server-check/self-test.js";
import { recording } from "./support/recordings.js";

const props = JSON.parse(recording("props").response.body) as Props;
const sha = templateSha256(props.chat_template!);

describe("self-test", () => {
  it("passes when /props matches the contract (recorded props)", () => {
    const r = evaluateProps(props, { template_sha256: sha, n_ctx_per_slot: 32768, total_slots: 3 }, 1000);
    expect(r).toMatchObject({ ran: true, passed: true, mismatches: [], actualNCtx: 32768, actualTotalSlots: 3 });
    expect(r.actualTemplateSha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it("lists every mismatch with expected and actual", () => {
    const prod = "f55f52930aa8bf44ab5cb85f99370fcc3c56e9a85640b812086d5330bce5d86b";
    const r = evaluateProps(props, { template_sha256: prod, n_ctx_per_slot: 131072, total_slots: 3 }, 1000);
    expect(r.passed).toBe(false);
    expect(r.mismatches).toHaveLength(2);
    expect(r.mismatches[0]).toContain(`template_sha256: expected ${prod}, server has ${sha}`);
    expect(r.mismatches[1]).toContain("n_ctx_per_slot: expected 131072, server has 32768");
  });

  it("fails a server without a template", () => {
    const r = evaluateProps(
      { total_slots: 3, default_generation_settings: { n_ctx: 10 } },
      { template_sha256: sha, n_ctx_per_slot: 10, total_slots: 3 },
      0,
    );
    expect(r.passed).toBe(false);
    expect(r.mismatches[0]).toMatch(/--jinja/);
  });
});
