import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { PolicyRule } from "../src/config-types.js";
import { hostMatches, hostPatternProblem } from "../src/policy/hosts.js";
import { checkRules, pathPatternProblem, ruleProblems } from "../src/policy/rule-check.js";
import { decide } from "../src/policy/rules.js";

// Letters first: an all-digit name is an IPv4 address to the host parser ("0" is 0.0.0.0).
const label = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);
const hostName = fc.array(label, { minLength: 1, maxLength: 5 }).map((ls) => ls.join("."));
const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((a) => a.join("."));
const anyHost = fc.oneof(hostName, ipv4, fc.constant("::1"), fc.constant("localhost"));

const defaults = { read: "allow", write: "ask", exec: "ask", network: "ask" } as const;
const fetchOf = (host: string) => ({ tool: "fetch_url", risk: "network" as const, paths: [], hosts: [host] });
const known = { names: ["read_file", "write_file", "run_command", "fetch_url", "list_dir"], mcpServers: ["github"] };

describe("host patterns mean what they say", () => {
  it('a deny with hosts ["*"] denies every host, whatever its spelling', () => {
    const rules: PolicyRule[] = [{ name: "no-net", tool: "fetch_url", effect: "deny", hosts: ["*"] }];
    fc.assert(
      fc.property(anyHost, fc.constantFrom("", ".", ":8443"), (h, tail) => {
        expect(decide(rules, defaults, fetchOf(`${h}${h.includes(":") ? "" : tail}`))).toEqual({
          effect: "deny",
          rule: "no-net",
        });
      }),
    );
  });

  it("*. covers one or more labels below the domain, never the domain itself or a look-alike", () => {
    fc.assert(
      fc.property(hostName, fc.array(label, { minLength: 1, maxLength: 3 }), label, (domain, below, other) => {
        const sub = `${below.join(".")}.${domain}`;
        expect(hostMatches(`*.${domain}`, sub)).toBe(true);
        expect(hostMatches(`*.${domain}`, sub.toUpperCase())).toBe(true);
        expect(hostMatches(`*.${domain}`, domain)).toBe(false);
        expect(hostMatches(`*.${domain}`, `${other}${domain}`)).toBe(false);
        // Unless the name after it happens to end in the domain again (x.x is below x): seed -1602768101.
        const after = `${domain}.${other}`;
        expect(hostMatches(`*.${domain}`, after)).toBe(after.toLowerCase().endsWith(`.${domain.toLowerCase()}`));
      }),
    );
  });

  it("a * inside a label stays inside it", () => {
    expect(hostMatches("api-*.example.org", "api-eu.example.org")).toBe(true);
    expect(hostMatches("api-*.example.org", "api-eu.evil.example.org")).toBe(false);
    expect(hostMatches("10.0.0.*", "10.0.0.7")).toBe(true);
    expect(hostMatches("10.0.0.*", "10.0.1.7")).toBe(false);
    // The canonical spellings meet the same rule: one-number IPv4, IDN, a trailing dot.
    expect(hostMatches("10.0.0.*", "167772167")).toBe(true);
    expect(hostMatches("*.bücher.de", "shop.xn--bcher-kva.de.")).toBe(true);
    expect(hostMatches("api.github.com", "API.GitHub.com.")).toBe(true);
  });

  it("a host pattern that can never match a request's host is named", () => {
    for (const p of [
      "",
      " ",
      "https://evil.test/",
      "evil.test/path",
      "user@evil.test",
      "**.evil.test",
      "evil.test:443",
    ])
      expect(hostPatternProblem(p), p).toBeDefined();
    for (const p of ["*", "*.example.org", "api.github.com", "10.0.0.*", "::1", "[::1]", "bücher.de", "api-*.x.org"])
      expect(hostPatternProblem(p), p).toBeUndefined();
  });
});

describe("rules that cannot mean what they say are refused at start", () => {
  it("path globs no resolved path can meet", () => {
    for (const g of ["", "src/", "a//b", "../x", "src/./a", "/etc/../shadow"])
      expect(pathPatternProblem(g), g).toBeDefined();
    for (const g of ["src/**", "./src/**", "/srv/data/**", ".env", "**/*.pem", "/"])
      expect(pathPatternProblem(g), g).toBeUndefined();
  });

  it("tools: a misspelt name, a glob over nothing; an MCP server's tools and globs over built-ins pass", () => {
    const rule = (tool: string): PolicyRule => ({ tool, effect: "deny" });
    expect(ruleProblems([rule("fetch_ulr")], known)).toEqual([
      'policy.rules[0]: tool "fetch_ulr" is not a tool (built-in ones, or server.tool of an MCP server in mcp_servers)',
    ]);
    expect(ruleProblems([rule("gitlab.*")], known)[0]).toMatch(/matches no tool/);
    expect(ruleProblems([rule("github.")], known)[0]).toMatch(/is not a tool/);
    for (const ok of ["*", "read_*", "github.create_issue", "github.*", "*_issue", "git*", "*.create_issue"])
      expect(ruleProblems([rule(ok)], known), ok).toEqual([]);
  });

  it("prefixes on a tool that runs no command, empty lists, empty prefixes", () => {
    const problems = ruleProblems(
      [
        { name: "cat", tool: "read_file", effect: "deny", command_prefixes: ["cat"] },
        { tool: "run_command", effect: "deny", command_prefixes: [" "] },
        { tool: "fetch_url", effect: "deny", hosts: [] },
        { tool: "run_*", effect: "allow", command_prefixes: ["git status"] },
      ],
      known,
    );
    expect(problems).toEqual([
      'policy.rules[0] (cat): command_prefixes apply only to run_command, and tool "read_file" does not cover it',
      "policy.rules[1]: a command prefix is empty",
      "policy.rules[2]: hosts is an empty list, so the rule matches nothing: remove the key or name one",
    ]);
  });

  it("the error is one line: the first problem and how many more", () => {
    const rules: PolicyRule[] = [
      { tool: "fetch_url", effect: "deny", hosts: ["https://a.test"] },
      { tool: "nope", effect: "deny" },
      { tool: "read_file", effect: "deny", paths: ["x/"] },
    ];
    expect(() => checkRules(rules, known)).toThrow(
      /^policy\.rules\[0\]: host "https:\/\/a\.test" is a URL.*\(and 2 more problems\)$/,
    );
    expect(() => checkRules([{ tool: "read_file", effect: "deny", paths: ["./secrets/**"] }], known)).not.toThrow();
  });

  it("./ in a rule's path is the workspace root, as it reads", () => {
    const rules: PolicyRule[] = [{ name: "no-secrets", tool: "read_file", effect: "deny", paths: ["./secrets/**"] }];
    const s = {
      tool: "read_file",
      risk: "read" as const,
      paths: [{ rel: "secrets/k", abs: "/ws/secrets/k" }],
      hosts: [],
    };
    expect(decide(rules, defaults, s)).toEqual({ effect: "deny", rule: "no-secrets" });
  });
});
