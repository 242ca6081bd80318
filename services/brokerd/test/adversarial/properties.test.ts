import { ToolDecision } from "@boxmaker/common";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import type { PolicyRule } from "../../src/config-types.js";
import { DEFAULT_SECRET_PATTERNS } from "../../src/config.js";
import { compileGlob, PathMatcher } from "../../src/policy/glob.js";
import { decide } from "../../src/policy/rules.js";
import type { CallOutcome } from "../../src/call-outcome.js";
import { rig, type Rig } from "../helpers.js";
import { leaked, newCounts, outsideIntact, pathArb, plantWorkspace, rmLineArb, toolCallArb } from "./harness.js";

/** Generated inputs across this file (≥ 5,000 in total); BX_FC_SCALE scales every property. */
const SCALE = Number(process.env.BX_FC_SCALE ?? 1);
const runs = (n: number) => Math.max(10, Math.round(n * SCALE));
const counts = newCounts();

afterAll(() => {
  console.log(`[adversarial properties] inputs=${counts.inputs} escapes=${counts.escapes} crashes=${counts.crashes}`);
});

/** The regex translation globs used before the NFA matcher: the reference for equivalence. */
function referenceGlob(glob: string): RegExp {
  let re = "";
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === "*") {
      if (glob[i + 1] === "*") {
        i++;
        while (glob[i + 1] === "*") i++;
        if (glob[i + 1] === "/") {
          i++;
          re += "(?:.*/)?";
        } else re += ".*";
      } else re += "[^/]*";
    } else if (c === "?") re += "[^/]";
    else re += c.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

describe("globs (linear-time matcher)", () => {
  const globChars = fc.constantFrom("a", "b", "/", ".", "*", "?", "**", "**/");
  const pathChars = fc.constantFrom("a", "b", "/", ".");
  it("agrees with the regex reference on every pattern and path", () => {
    fc.assert(
      fc.property(fc.array(globChars, { maxLength: 8 }), fc.array(pathChars, { maxLength: 14 }), (g, p) => {
        counts.inputs++;
        const glob = g.join("");
        const path = p.join("");
        return compileGlob(glob).test(path) === referenceGlob(glob).test(path);
      }),
      { numRuns: runs(1500) },
    );
  });

  it("secret matching is case-insensitive and segment-anchored, in any nesting", () => {
    const m = new PathMatcher(DEFAULT_SECRET_PATTERNS, { ignoreCase: true });
    const secret = fc.constantFrom(
      ".env",
      ".env.local",
      "KEY.PEM",
      "server.Key",
      "id_rsa",
      "ID_ED25519.pub",
      ".envrc",
      "credentials.json",
      "kubeconfig",
      "secrets.yml",
      ".netrc",
      ".npmrc",
      ".PyPIrc",
    );
    const dir = fc.array(fc.constantFrom("src", "a", "node_modules", ".git", "x.y", "deep"), { maxLength: 6 });
    const flip = (s: string, mask: number) =>
      [...s].map((c, i) => ((mask >> (i % 30)) & 1 ? c.toUpperCase() : c.toLowerCase())).join("");
    fc.assert(
      fc.property(dir, secret, fc.integer({ min: 0, max: 2 ** 30 }), fc.boolean(), (d, s, mask, below) => {
        counts.inputs++;
        const rel = [...d, flip(s, mask), ...(below ? ["child"] : [])].join("/");
        return m.matches(rel, `/ws/${rel}`);
      }),
      { numRuns: runs(800) },
    );
    expect(m.matches("src/.git/config", "/ws/src/.git/config")).toBe(true);
    expect(m.matches("src/git/config", "/ws/src/git/config")).toBe(false);
    expect(m.matches("environment.ts", "/ws/environment.ts")).toBe(false);
  });
});

describe("command lines (policy on programs)", () => {
  const noRm: PolicyRule[] = [{ name: "no-rm", tool: "run_command", effect: "deny", command_prefixes: ["rm"] }];
  const defaults = { read: "allow", write: "ask", exec: "allow", network: "deny" } as const;
  it("a deny on rm holds through every wrapper, construct and quoting", () => {
    fc.assert(
      fc.property(rmLineArb(), (line) => {
        counts.inputs++;
        const d = decide(noRm, defaults, { tool: "run_command", risk: "exec", paths: [], command: line, hosts: [] });
        if (d.effect === "allow") counts.escapes++;
        return d.effect === "deny" || d.rule === "command:opaque";
      }),
      { numRuns: runs(1200) },
    );
  });

  it("arbitrary strings never crash the analysis, and an allow never covers what it cannot see", () => {
    const allowLs: PolicyRule[] = [{ tool: "run_command", effect: "allow", command_prefixes: ["ls"] }];
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (line) => {
        counts.inputs++;
        const d = decide(
          allowLs,
          { ...defaults, exec: "ask" },
          { tool: "run_command", risk: "exec", paths: [], command: `ls ${line}`, hosts: [] },
        );
        // An escape: a second program chained after ls (rm, sh, eval) and still allowed.
        if (d.effect === "allow" && /(;|&&|\|\||\||\$\(|`|\n)\s*(rm|sh|eval)(\s|$)/.test(line)) counts.escapes++;
        return ["allow", "ask", "deny"].includes(d.effect);
      }),
      { numRuns: runs(800) },
    );
  });
});

describe("tool calls against a planted workspace", () => {
  let r: Rig;
  beforeAll(async () => {
    r = await rig(
      {
        policy: {
          rules: [
            { name: "writes", tool: "write_file", effect: "allow" },
            { name: "edits", tool: "edit_file", effect: "allow" },
            { name: "no-commands", tool: "run_command", effect: "deny" },
          ],
        },
      },
      plantWorkspace,
    );
  });
  afterAll(async () => r?.cleanup());

  it("no path reaches outside or a secret, for reads, listings and writes", async () => {
    await fc.assert(
      fc.asyncProperty(
        pathArb(r.ws, r.outside),
        fc.constantFrom("read_file", "list_dir", "write_file"),
        async (path, tool) => {
          counts.inputs++;
          let out: CallOutcome;
          try {
            out = await r.call(tool, tool === "write_file" ? { path, content: "w" } : { path });
          } catch {
            counts.crashes++;
            return false;
          }
          if (leaked(out)) counts.escapes++;
          return !leaked(out) && out.rule !== "tool:crashed";
        },
      ),
      { numRuns: runs(1000) },
    );
    expect(outsideIntact(r.outside)).toBe(true);
  });

  it("arbitrary arguments to every tool: an answer, never a crash, never a leak", async () => {
    await fc.assert(
      fc.asyncProperty(toolCallArb(r.ws, r.outside), async ({ name, args }) => {
        counts.inputs++;
        let out: CallOutcome;
        try {
          out = await r.call(name, args);
        } catch {
          counts.crashes++;
          return false;
        }
        if (leaked(out)) counts.escapes++;
        if (out.rule === "tool:crashed") counts.crashes++;
        return (
          !leaked(out) &&
          out.rule !== "tool:crashed" &&
          [ToolDecision.ALLOWED, ToolDecision.DENIED, ToolDecision.STAGED].includes(out.decision)
        );
      }),
      { numRuns: runs(800) },
    );
    expect(outsideIntact(r.outside)).toBe(true);
  }, 120_000);

  it("the totals: enough inputs, no escapes, no crashes", () => {
    if (SCALE >= 1) expect(counts.inputs).toBeGreaterThanOrEqual(5000);
    expect(counts.escapes).toBe(0);
    expect(counts.crashes).toBe(0);
  });
});
