import { ToolDecision } from "@boxmaker/common";
import { afterEach, describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PolicyRule } from "../../src/config-types.js";
import { decide } from "../../src/policy/rules.js";
import { analyzeCommand } from "../../src/policy/shell.js";
import { rig, type Rig } from "../helpers.js";

const defaults = { read: "allow", write: "ask", exec: "ask", network: "deny" } as const;
const run = (rules: PolicyRule[], command: string, d: Record<string, "allow" | "ask" | "deny"> = defaults) =>
  decide(rules, d as typeof defaults, { tool: "run_command", risk: "exec", paths: [], command, hosts: [] });

const noRm: PolicyRule[] = [{ name: "no-rm", tool: "run_command", effect: "deny", command_prefixes: ["rm"] }];

const RM_BYPASSES = [
  "rm -rf x",
  "command rm -rf x",
  "\\rm -rf x",
  "/bin/rm -rf x",
  "/usr/bin/rm x",
  "env rm x",
  "env -i FOO=1 rm x",
  "exec rm x",
  "{ rm x; }",
  "(rm x)",
  "if true; then rm x; fi",
  "while false; do rm x; done",
  "for f in a; do rm $f; done",
  "case a in a) rm x;; esac",
  "f() { rm x; }; f",
  "true && rm x",
  "false || rm x",
  "echo | rm x",
  "echo $(rm x)",
  "echo `rm x`",
  "nice -n 5 rm x",
  "timeout 5 rm x",
  "sudo -u root rm x",
  "nohup rm x",
  "xargs rm < list",
  "echo a | xargs -n1 rm",
  "find . -name '*.o' -exec rm {} ;",
  "find . -execdir rm {} +",
  "sh -c 'rm x'",
  'bash -c "rm -rf x"',
  "r\\m x",
  "'rm' x",
  '"rm" x',
  "command command rm x",
  "env nice timeout 3 rm x",
  "! rm x",
  "rm x &",
  "time rm x",
  "((rm x))",
  "time ! rm x",
];

describe("deny rules apply to programs, wherever they sit in the line", () => {
  it.each(RM_BYPASSES)("%s is denied", (line) => {
    expect(run(noRm, line)).toEqual({ effect: "deny", rule: "no-rm" });
  });

  it("does not deny look-alikes", () => {
    expect(run(noRm, "echo rm").effect).toBe("ask");
    expect(run(noRm, "rmdir x").effect).toBe("ask");
    expect(run(noRm, "command -v rm").effect).toBe("ask");
  });

  it.each([
    ["eval 'rm x'", "eval"],
    ["x=rm; $x file", "computed"],
    ['sh -c "$CMD"', "computed script"],
    ["$(echo rm) x", "computed"],
    ["source ./script.sh", "source"],
    ["bash script.sh", "script file"],
    ["if then fi ((", "does not parse"],
  ])("what the parser cannot see through is at least ask: %s", (line, why) => {
    expect(analyzeCommand(line).opaque.join(" ")).toMatch(new RegExp(why));
    const allowAll: PolicyRule[] = [{ tool: "run_command", effect: "allow" }];
    expect(run(allowAll, line)).toEqual({ effect: "ask", rule: "command:opaque" });
    expect(run([], line, { ...defaults, exec: "allow" }).effect).toBe("ask");
  });

  it("an allow covers only lines whose every program is allowed and that write no file", () => {
    const rules: PolicyRule[] = [
      { name: "ro", tool: "run_command", effect: "allow", command_prefixes: ["git status", "ls", "grep"] },
    ];
    expect(run(rules, "git status && ls -la | grep x").effect).toBe("allow");
    expect(run(rules, "ls > /dev/null 2>&1").effect).toBe("allow");
    expect(run(rules, "ls > out.txt").effect).toBe("ask");
    expect(run(rules, "ls; rm x").effect).toBe("ask");
    expect(run(rules, "ls $(rm x)").effect).toBe("ask");
    expect(run(rules, "env rm x").effect).toBe("ask");
  });
});

describe("rules on every tool name are consulted", () => {
  let r: Rig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  it("find_tool and call_tool can be denied; an ask on call_tool stages what it calls", async () => {
    r = await rig({ policy: { rules: [{ name: "no-find", tool: "find_tool", effect: "deny" }] } });
    expect(await r.call("find_tool", { query: "blob" })).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "no-find",
    });
    await r.cleanup();
    r = await rig({ policy: { rules: [{ name: "no-call", tool: "call_tool", effect: "deny" }] } });
    expect(
      await r.call("call_tool", { name: "read_blob", arguments: { blob: `blob:sha256:${"0".repeat(64)}` } }),
    ).toMatchObject({ decision: ToolDecision.DENIED, rule: "no-call" });
    await r.cleanup();
    r = await rig({ policy: { rules: [{ name: "review-calls", tool: "call_tool", effect: "ask" }] } });
    const found = await r.call("find_tool", { query: "read lines of a stored large result blob" });
    expect(found.decision).toBe(ToolDecision.ALLOWED);
    const blob = r.broker.blobs.put("a\nb\n");
    const res = await r.call("call_tool", { name: "read_blob", arguments: { blob: `blob:sha256:${blob}` } });
    expect(res).toMatchObject({ decision: ToolDecision.STAGED, rule: "review-calls" });
  });

  it("spawn_agent goes through policy: allowed by default, deny and ask hold", async () => {
    r = await rig();
    expect(await r.call("spawn_agent", { task: "count" })).toMatchObject({
      decision: ToolDecision.ALLOWED,
      isError: false,
    });
    await r.cleanup();
    r = await rig({ policy: { rules: [{ name: "no-sub", tool: "spawn_agent", effect: "deny" }] } });
    expect(await r.call("spawn_agent", { task: "count" })).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "no-sub",
    });
  });

  it("search_files does not open files a path rule denies", async () => {
    r = await rig(
      { policy: { rules: [{ name: "no-private", tool: "*", effect: "deny", paths: ["private/**"] }] } },
      ({ ws }) => {
        mkdirSync(join(ws, "private"));
        writeFileSync(join(ws, "private", "p.txt"), "needle private\n");
        writeFileSync(join(ws, "pub.txt"), "needle public\n");
      },
    );
    const res = await r.call("search_files", { pattern: "needle" });
    expect(res.content).toMatch(/pub\.txt:1: needle public/);
    expect(res.content).not.toMatch(/needle private/);
    expect(res.content).toMatch(/skipped: policy rules/);
  });
});
