import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolDecision } from "@boxmaker/common";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { parseBrokerConfig } from "../../src/config.js";
import { PROJECT_HOOKS_FILE } from "../../src/hooks/project-file.js";
import { runHook } from "../../src/hooks/runner.js";
import { hooksFor } from "../../src/hooks/select.js";
import type { HookSpec } from "../../src/hooks/types.js";
import { Sandbox } from "../../src/sandbox.js";
import { requires } from "../../../../test/support/requirements.js";
import { rig, type Rig } from "../helpers.js";

const NO_BWRAP = { mode: "none", allow_unsandboxed: true };
const allowWrites = {
  rules: [
    { tool: "write_file", effect: "allow" },
    { tool: "run_command", effect: "allow" },
  ],
};

let r: Rig | undefined;
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
});

/** The audit lines of kind "hook", after the broker flushed them. */
async function hookLines(x: Rig): Promise<Array<Record<string, unknown>>> {
  await x.broker.close();
  const text = readFileSync(join(x.config.state_dir, "audit.jsonl"), "utf8");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.kind === "hook");
}

const spec = (command: string, more: Partial<HookSpec> = {}): HookSpec => ({
  command,
  timeout_ms: 30_000,
  output_cap_bytes: 8192,
  unsandboxed: false,
  ...more,
});

describe("which hooks fire", () => {
  it("a hook fires for exactly the tool names its match lists, and for every one without match", () => {
    const name = fc.stringMatching(/^[a-z_.]{1,12}$/);
    fc.assert(
      fc.property(fc.array(name, { maxLength: 4 }), name, fc.boolean(), (match, tool, withMatch) => {
        const s = [
          { origin: { kind: "operator" as const }, hooks: { post_tool: [spec("x", withMatch ? { match } : {})] } },
        ];
        const fired = hooksFor(s, "post_tool", tool).length === 1;
        expect(fired).toBe(!withMatch || match.includes(tool));
        expect(hooksFor(s, "pre_tool", tool)).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it("operator hooks come first, then project hooks, each in the order written", () => {
    const s = [
      { origin: { kind: "operator" as const }, hooks: { turn_end: [spec("a"), spec("b", { name: "bee" })] } },
      {
        origin: { kind: "project" as const, file: "/w/.boxmaker/hooks.json", root: "/w" },
        hooks: { turn_end: [spec("c")] },
      },
    ];
    expect(hooksFor(s, "turn_end", "").map((h) => [h.name, h.origin.kind])).toEqual([
      ["turn_end[0]", "operator"],
      ["bee", "operator"],
      ["turn_end[0]", "project"],
    ]);
  });
});

describe("a hook's input arrives on stdin, byte for byte", () => {
  const sandbox = Sandbox.probe(parseBrokerConfig({ sandbox: NO_BWRAP }).sandbox, [], []);
  it("arguments with quotes, $(…), backticks, newlines and non-ASCII reach the hook unchanged and run nothing", async () => {
    const tricky = fc.array(
      fc.oneof(
        fc.constantFrom("'", '"', "$(touch pwned)", "`id`", "\n", "\\", "';exit 3;'", "é", "\u0001", "%s"),
        fc.string(),
      ),
      { maxLength: 8 },
    );
    await fc.assert(
      fc.asyncProperty(tricky, async (parts) => {
        const args = { path: parts.join(""), n: parts.length };
        const input = { event: "pre_tool" as const, session_id: "s", cwd: "/tmp", tool: "t", arguments: args };
        for (const unsandboxed of [false, true]) {
          const run = await runHook(sandbox, spec("cat", { unsandboxed, output_cap_bytes: 65536 }), input);
          expect(run.exitCode).toBe(0);
          expect(JSON.parse(run.output)).toEqual(input);
        }
      }),
      { numRuns: 60 },
    );
  });
});

describe("tool hooks in the call pipeline", () => {
  it("masks a secret a post_tool hook prints, as the result itself is masked", async () => {
    const token = `ghp_${"A1b2C3d4E5f6G7h8".repeat(2)}Z9y8`;
    r = await rig({
      sandbox: NO_BWRAP,
      policy: allowWrites,
      hooks: { post_tool: [{ name: "leaky", match: ["write_file"], command: `echo "deploy token ${token}"` }] },
    });
    const res = await r.call("write_file", { path: "b.txt", content: "x\n" });
    expect(res.content).toContain("deploy token [secret masked: github-pat]");
    expect(res.content).not.toContain(token.slice(4));
  });

  it("post_tool's output is a note on the tool result, with the call on its stdin", async () => {
    r = await rig(({ outside }) => ({
      sandbox: NO_BWRAP,
      policy: allowWrites,
      hooks: {
        post_tool: [
          {
            name: "lint",
            match: ["write_file"],
            command: `cat > ${outside}/in.json; echo "a.py:1:1: E999 SyntaxError"; exit 1`,
          },
        ],
      },
    }));
    const res = await r.call("write_file", { path: "a.py", content: "def(:\n" });
    expect(res.decision).toBe(ToolDecision.ALLOWED);
    expect(res.content).toMatch(/^Created a\.py/);
    expect(res.content).toContain('[post_tool hook "lint" exited 1]\na.py:1:1: E999 SyntaxError');
    const seen = JSON.parse(readFileSync(join(r.outside, "in.json"), "utf8"));
    expect(seen).toMatchObject({
      event: "post_tool",
      tool: "write_file",
      arguments: { path: "a.py" },
      is_error: false,
    });
    expect(seen.result_excerpt).toMatch(/^Created a\.py/);
    // Not for a tool its match does not name.
    const other = await r.call("list_dir", { path: "." });
    expect(other.content).not.toContain("post_tool hook");
    expect(await hookLines(r)).toEqual([
      expect.objectContaining({ decision: "ok", rule: "hook:post_tool:lint", is_error: true, tool: "write_file" }),
    ]);
  });

  it("pre_tool exiting 2 denies the call with its reason, and nothing is written", async () => {
    r = await rig({
      sandbox: NO_BWRAP,
      policy: allowWrites,
      hooks: { pre_tool: [{ name: "guard", command: "echo 'no writes to generated files' >&2; exit 2" }] },
    });
    const res = await r.call("write_file", { path: "gen.ts", content: "x" });
    expect(res.decision).toBe(ToolDecision.DENIED);
    expect(res.rule).toBe("hook:denied");
    expect(res.content).toContain('pre_tool hook "guard": no writes to generated files');
    expect(existsSync(join(r.ws, "gen.ts"))).toBe(false);
    expect(await hookLines(r)).toEqual([expect.objectContaining({ decision: "denied", rule: "hook:pre_tool:guard" })]);
  });

  it("a pre_tool hook denies before staging: no person is asked about a call it refuses", async () => {
    r = await rig({ sandbox: NO_BWRAP, hooks: { pre_tool: [{ command: "exit 2" }] } });
    const res = await r.call("write_file", { path: "a.txt", content: "x" });
    expect(res.decision).toBe(ToolDecision.DENIED);
    expect(res.content).toContain("(no reason given)");
    expect(r.broker.listProposals("", false)).toEqual([]);
  });

  it("hooks that fail, crash, time out or flood never break the call", async () => {
    r = await rig({
      sandbox: NO_BWRAP,
      policy: allowWrites,
      hooks: {
        pre_tool: [{ command: "exit 1" }, { command: "no-such-program-xyz" }, { command: "sleep 30", timeout_ms: 200 }],
        post_tool: [
          { name: "slow", command: "echo started; sleep 30", timeout_ms: 200 },
          { name: "flood", command: "head -c 200000 /dev/zero | tr '\\0' x", output_cap_bytes: 1000 },
        ],
      },
    });
    const res = await r.call("write_file", { path: "a.txt", content: "x" });
    expect(res.decision).toBe(ToolDecision.ALLOWED);
    expect(readFileSync(join(r.ws, "a.txt"), "utf8")).toBe("x");
    expect(res.content).toContain('[post_tool hook "slow" timed out after 200 ms]\nstarted');
    const flood = res.content.slice(res.content.indexOf('"flood"'));
    expect(flood).toContain("[199000 more bytes of hook output dropped]");
    expect(flood).toMatch(/\nx{1000}\n/);
    const lines = await hookLines(r);
    expect(lines.map((l) => l.decision)).toEqual(["ok", "ok", "timed-out", "timed-out", "ok"]);
    expect(lines[4]).toMatchObject({ result_bytes: 1000, hook: { dropped_bytes: 199000 } });
  });

  it("post_tool runs after an approved proposal, its note in the result the model gets", async () => {
    r = await rig({ sandbox: NO_BWRAP, hooks: { post_tool: [{ name: "lint", command: "echo lint says hi" }] } });
    const staged = await r.call("write_file", { path: "a.txt", content: "x" });
    expect(staged.decision).toBe(ToolDecision.STAGED);
    const done = await r.broker.decideProposal(staged.proposalId, true, "");
    expect(done.state).toBe("applied");
    expect(done.result).toContain('[post_tool hook "lint" exited 0]\nlint says hi');
  });
});

describe("a project's hook file runs only with the exact content a person trusted", () => {
  const marker = (ws: string) => join(ws, "..", "outside", "ran");
  const write = (ws: string, command: string) => {
    mkdirSync(join(ws, ".boxmaker"), { recursive: true });
    const text = JSON.stringify({ hooks: { post_tool: [{ command }] } });
    writeFileSync(join(ws, PROJECT_HOOKS_FILE), text);
    return createHash("sha256").update(text).digest("hex");
  };

  it("untrusted: listed and not run; trusted: run; changed: untrusted again", async () => {
    r = await rig({ sandbox: NO_BWRAP, policy: allowWrites });
    const ws = r.ws;
    const sha = write(ws, `echo once >> ${marker(ws)}`);
    expect(r.broker.hooks.projectFiles()).toEqual([expect.objectContaining({ state: "untrusted", sha256: sha })]);
    await r.call("write_file", { path: "a.txt", content: "1" });
    expect(existsSync(marker(ws))).toBe(false);

    const file = join(ws, PROJECT_HOOKS_FILE);
    expect(() => r!.broker.hooks.trust(file, "0".repeat(64))).toThrow(
      expect.objectContaining({ rule: "hooks:changed" }),
    );
    r.broker.hooks.trust(file, sha);
    await r.call("write_file", { path: "a.txt", content: "2" });
    expect(readFileSync(marker(ws), "utf8")).toBe("once\n");

    write(ws, `echo twice >> ${marker(ws)}`);
    expect(r.broker.hooks.projectFiles()[0]!.state).toBe("untrusted");
    await r.call("write_file", { path: "a.txt", content: "3" });
    expect(readFileSync(marker(ws), "utf8")).toBe("once\n");
  });

  it("a project file cannot mark a hook unsandboxed (the file is invalid, nothing in it runs)", async () => {
    r = await rig({ sandbox: NO_BWRAP });
    mkdirSync(join(r.ws, ".boxmaker"));
    writeFileSync(
      join(r.ws, PROJECT_HOOKS_FILE),
      JSON.stringify({ hooks: { turn_end: [{ command: "x", unsandboxed: true }] } }),
    );
    const [f] = r.broker.hooks.projectFiles();
    expect(f).toMatchObject({ state: "invalid" });
    expect(() => r!.broker.hooks.trust(f!.file, f!.sha256)).toThrow(expect.objectContaining({ rule: "hooks:invalid" }));
  });

  it("any content other than the trusted one never runs (generated edits of a trusted file)", async () => {
    r = await rig({ sandbox: NO_BWRAP, policy: allowWrites });
    const ws = r.ws;
    const file = join(ws, PROJECT_HOOKS_FILE);
    r.broker.hooks.trust(file, write(ws, "true"));
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 20 }), async (suffix) => {
        // The attacker's version runs a marker; whitespace or key order alone is a change too.
        writeFileSync(
          file,
          `${JSON.stringify({ hooks: { post_tool: [{ command: `echo x >> ${marker(ws)}` }] } })}${" ".repeat(suffix.length)}`,
        );
        await r!.call("write_file", { path: "a.txt", content: String(n++) });
        expect(existsSync(marker(ws))).toBe(false);
      }),
      { numRuns: 25 },
    );
  });

  it("the model cannot write or edit the hook file with file tools, whatever the policy", async () => {
    r = await rig({ sandbox: NO_BWRAP, policy: { rules: [{ tool: "*", effect: "allow" }] } });
    for (const path of [
      PROJECT_HOOKS_FILE,
      "./.boxmaker/hooks.json",
      ".BOXMAKER/Hooks.JSON",
      ".boxmaker/x/../hooks.json",
    ]) {
      const res = await r.call("write_file", { path, content: '{"hooks":{"turn_end":[{"command":"id"}]}}' });
      expect(res.decision, path).toBe(ToolDecision.DENIED);
      expect(res.rule, path).toBe("path:protected");
    }
    expect(existsSync(join(r.ws, PROJECT_HOOKS_FILE))).toBe(false);
  });
});

describe.skipIf(!requires("brokerd hooks in the bwrap sandbox", ["bwrap"]))("hooks in bwrap", () => {
  it("a sandboxed hook cannot write outside the workspace; an unsandboxed operator hook can", async () => {
    r = await rig(({ outside }) => ({
      policy: allowWrites,
      hooks: {
        post_tool: [
          { name: "boxed", command: `echo x > ${outside}/boxed` },
          { name: "free", command: `cat > ${outside}/free`, unsandboxed: true },
        ],
      },
    }));
    const res = await r.call("write_file", { path: "a.txt", content: "x" });
    expect(res.content).toMatch(/"boxed" exited [12]\]\n.*(Read-only|nonexistent|Permission)/);
    expect(existsSync(join(r.outside, "boxed"))).toBe(false);
    expect(JSON.parse(readFileSync(join(r.outside, "free"), "utf8"))).toMatchObject({ tool: "write_file" });
  });

  it("a command cannot change a trusted hook file (it is bound read-only)", async () => {
    r = await rig({ policy: allowWrites });
    mkdirSync(join(r.ws, ".boxmaker"));
    const text = '{"hooks":{}}';
    writeFileSync(join(r.ws, PROJECT_HOOKS_FILE), text);
    r.broker.hooks.trust(join(r.ws, PROJECT_HOOKS_FILE), createHash("sha256").update(text).digest("hex"));
    const res = await r.call("run_command", {
      command: `echo '{"hooks":{"turn_end":[{"command":"id"}]}}' > ${PROJECT_HOOKS_FILE}; mv ${PROJECT_HOOKS_FILE} x.json`,
    });
    expect(res.content).toMatch(/Read-only|busy|Permission/);
    expect(readFileSync(join(r.ws, PROJECT_HOOKS_FILE), "utf8")).toBe(text);
    expect(r.broker.hooks.projectFiles()[0]!.state).toBe("trusted");
  });
});
