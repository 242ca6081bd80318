import { describe, expect, it } from "vitest";
import { DEFAULT_SECRET_PATTERNS } from "../src/config.js";
import type { Effect, PolicyRule, Risk } from "../src/config-types.js";
import { PathMatcher, compileGlob, toolGlobMatches } from "../src/policy/glob.js";
import { decide, type Subject } from "../src/policy/rules.js";

const defaults: Record<Risk, Effect> = { read: "allow", write: "ask", exec: "ask", network: "deny" };
const subject = (s: Partial<Subject> & { tool: string; risk: Risk }): Subject => ({ paths: [], hosts: [], ...s });
const file = (rel: string) => ({ rel, abs: `/ws/${rel}` });

describe("globs", () => {
  it("keeps * inside one segment and lets ** cross segments", () => {
    expect(compileGlob("src/*.ts").test("src/a.ts")).toBe(true);
    expect(compileGlob("src/*.ts").test("src/x/a.ts")).toBe(false);
    expect(compileGlob("src/**").test("src/x/a.ts")).toBe(true);
    expect(compileGlob("**/*.md").test("README.md")).toBe(true);
    expect(compileGlob("**/*.md").test("docs/a/b.md")).toBe(true);
    expect(compileGlob("a.b").test("axb")).toBe(false);
  });

  it("tool globs cross dots", () => {
    expect(toolGlobMatches("github.*", "github.create_issue")).toBe(true);
    expect(toolGlobMatches("github.*", "gitlab.x")).toBe(false);
    expect(toolGlobMatches("*", "read_file")).toBe(true);
  });

  it("finds secrets anywhere in a path, including directories and multi-segment names", () => {
    const m = new PathMatcher(DEFAULT_SECRET_PATTERNS);
    const secret = (rel: string) => m.matches(rel, `/ws/${rel}`);
    for (const s of [
      ".env",
      "app/.env.local",
      "certs/server.pem",
      "tls.key",
      "home/.ssh/config",
      ".ssh",
      "id_rsa.pub",
      "x/.aws/credentials",
      ".netrc",
      ".git-credentials",
    ]) {
      expect(secret(s), s).toBe(true);
    }
    for (const s of ["src/env.ts", "keyboard.ts", "docs/ssh.md", "aws/credentials.md", "src/main.ts", ".envelope/x"]) {
      expect(secret(s), s).toBe(false);
    }
  });
});

describe("policy decisions", () => {
  it("uses the risk defaults when no rule matches: reads allow, writes and commands ask, network denies", () => {
    expect(decide([], defaults, subject({ tool: "read_file", risk: "read", paths: [file("a")] }))).toEqual({
      effect: "allow",
      rule: "default:read",
    });
    expect(decide([], defaults, subject({ tool: "write_file", risk: "write", paths: [file("a")] })).effect).toBe("ask");
    expect(decide([], defaults, subject({ tool: "run_command", risk: "exec", command: "ls" })).effect).toBe("ask");
    expect(decide([], defaults, subject({ tool: "web.fetch", risk: "network", hosts: ["x.org"] })).effect).toBe("deny");
  });

  it("combines matching rules as deny > ask > allow regardless of order", () => {
    const rules: PolicyRule[] = [
      { name: "scratch-ok", tool: "write_file", effect: "allow", paths: ["scratch/**"] },
      { name: "no-lockfiles", tool: "*", effect: "deny", paths: ["**/package-lock.json"] },
      { name: "review-scratch-json", tool: "write_file", effect: "ask", paths: ["scratch/*.json"] },
    ];
    const w = (rel: string) =>
      decide(rules, defaults, subject({ tool: "write_file", risk: "write", paths: [file(rel)] }));
    expect(w("scratch/a.txt")).toEqual({ effect: "allow", rule: "scratch-ok" });
    expect(w("scratch/a.json")).toEqual({ effect: "ask", rule: "review-scratch-json" });
    expect(w("scratch/package-lock.json")).toEqual({ effect: "deny", rule: "no-lockfiles" });
    expect(w("src/a.ts")).toEqual({ effect: "ask", rule: "default:write" });
    expect(
      decide(
        [...rules].reverse(),
        defaults,
        subject({ tool: "write_file", risk: "write", paths: [file("scratch/package-lock.json")] }),
      ).effect,
    ).toBe("deny");
  });

  it("allows a command prefix only for a plain command line that cannot chain another", () => {
    const rules: PolicyRule[] = [
      { name: "git-read", tool: "run_command", effect: "allow", command_prefixes: ["git status", "git diff"] },
    ];
    const run = (command: string) => decide(rules, defaults, subject({ tool: "run_command", risk: "exec", command }));
    expect(run("git status --short").effect).toBe("allow");
    expect(run("git diff HEAD~1").effect).toBe("allow");
    expect(run("git statusx").effect).toBe("ask");
    expect(run("git status; rm -rf /").effect).toBe("ask");
    expect(run("git status && curl x | sh").effect).toBe("ask");
    expect(run("git status $(rm -rf ~)").effect).toBe("ask");
    expect(run("git push").effect).toBe("ask");
  });

  it("denies a command prefix wherever it appears in a chain", () => {
    const rules: PolicyRule[] = [{ name: "no-rm", tool: "run_command", effect: "deny", command_prefixes: ["rm"] }];
    const run = (command: string) =>
      decide(rules, defaults, subject({ tool: "run_command", risk: "exec", command })).effect;
    expect(run("rm -rf build")).toBe("deny");
    expect(run("make && rm -rf build")).toBe("deny");
    expect(run("ls | rm x")).toBe("deny");
    expect(run("echo rm")).toBe("ask");
  });

  it("matches hosts exactly or by *. suffix; an allow must cover every host", () => {
    const rules: PolicyRule[] = [{ name: "gh", tool: "*", effect: "allow", hosts: ["*.github.com", "github.com"] }];
    const net = (hosts: string[]) =>
      decide(rules, defaults, subject({ tool: "gh.search", risk: "network", hosts })).effect;
    expect(net(["api.github.com"])).toBe("allow");
    expect(net(["github.com"])).toBe("allow");
    expect(net(["evilgithub.com"])).toBe("deny");
    expect(net(["api.github.com", "evil.org"])).toBe("deny");
  });

  it("matches host rules on canonical hosts: a rule written in any spelling holds for every spelling", () => {
    const rules: PolicyRule[] = [{ name: "no", tool: "*", effect: "deny", hosts: ["*.Denied.TEST.", "bücher.test"] }];
    const net = (hosts: string[]) =>
      decide(rules, { ...defaults, network: "allow" }, subject({ tool: "fetch_url", risk: "network", hosts })).effect;
    for (const h of [
      "api.denied.test",
      "API.DENIED.TEST.",
      "a.denied%2Etest",
      "x.denied\u3002test",
      "xn--bcher-kva.test",
    ])
      expect(net([h]), h).toBe("deny");
    expect(net(["denied.test"])).toBe("allow"); // `*.` covers names below the domain only
    expect(net(["notdenied.test"])).toBe("allow");
  });

  it("an allow rule with paths needs every path covered; a deny rule fires on any", () => {
    const allow: PolicyRule[] = [{ tool: "*", effect: "allow", paths: ["docs/**"] }];
    const two = subject({ tool: "x", risk: "write", paths: [file("docs/a"), file("src/b")] });
    expect(decide(allow, defaults, two)).toEqual({ effect: "ask", rule: "default:write" });
    const deny: PolicyRule[] = [{ tool: "*", effect: "deny", paths: ["src/**"] }];
    expect(decide(deny, defaults, two)).toEqual({ effect: "deny", rule: "rule[0]" });
  });

  it("absolute globs match the canonical path", () => {
    const rules: PolicyRule[] = [{ name: "abs", tool: "*", effect: "deny", paths: ["/ws/vendor/**"] }];
    expect(
      decide(rules, defaults, subject({ tool: "read_file", risk: "read", paths: [file("vendor/x.js")] })).rule,
    ).toBe("abs");
  });
});
