import { ToolDecision } from "@boxmaker/common";
import { describe, expect, it } from "vitest";
import { parseArguments } from "../src/arguments.js";
import { callRecord } from "../src/audit.js";
import type { PolicyRule } from "../src/config-types.js";
import { metaGate, pathRuledFor, subjectOf, withFloor } from "../src/policy/gate.js";
import { fakeTool } from "./fakes.js";

describe("the policy gate's pure pieces", () => {
  it("gates meta tools by operator rules only, never by the risk defaults", () => {
    const find = fakeTool("find_tool", "read");
    expect(metaGate([], find)).toEqual({ effect: "allow", rule: "default:read" });
    const rules: PolicyRule[] = [{ tool: "find_tool", effect: "deny", name: "no-find" }];
    expect(metaGate(rules, find)).toEqual({ effect: "deny", rule: "no-find" });
  });

  it("lets a stricter floor win and a weaker one pass", () => {
    const ask = { effect: "ask", rule: "review" } as const;
    expect(withFloor(ask, { effect: "allow", rule: "default:read" })).toBe(ask);
    const deny = { effect: "deny", rule: "no" } as const;
    expect(withFloor(ask, deny)).toBe(deny);
    expect(withFloor(undefined, deny)).toBe(deny);
  });

  it("describes a plan as the subject rules match on", () => {
    const t = fakeTool("run_command", "exec");
    const paths = [{ input: "a", root: "/w", rel: "a", abs: "/w/a", exists: true }];
    expect(subjectOf(t, { paths, command: "ls", execute: async () => ({ text: "", isError: false }) })).toEqual({
      tool: "run_command",
      risk: "exec",
      paths,
      command: "ls",
      hosts: [],
    });
  });

  it("reports paths a deny or ask rule covers for the tool, and nothing without such rules", () => {
    const t = fakeTool("search_files", "read");
    expect(pathRuledFor([{ tool: "*", effect: "allow", paths: ["**"] }], t)).toBeUndefined();
    const ruled = pathRuledFor([{ tool: "search_files", effect: "ask", paths: ["private/**"] }], t)!;
    expect(ruled("private/x", "/w/private/x")).toBe(true);
    expect(ruled("public/x", "/w/public/x")).toBe(false);
  });
});

describe("argument parsing", () => {
  it("parses once: an empty text is {}, a bad one is denied with the parser's words", () => {
    expect(parseArguments("t", "  ", 100)).toEqual({ ok: true, args: {} });
    expect(parseArguments("t", '{"a":[1]}', 100)).toEqual({ ok: true, args: { a: [1] } });
    const bad = parseArguments("t", "{", 100);
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.outcome).toMatchObject({ decision: ToolDecision.DENIED, rule: "arguments:not-json" });
  });

  it("measures the limit in bytes, not characters", () => {
    const text = JSON.stringify({ s: "é".repeat(40) });
    expect(text.length).toBeLessThanOrEqual(64);
    const r = parseArguments("t", text, 64);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.outcome.rule).toBe("limit:argument-size");
  });
});

describe("audit records", () => {
  it("write the wire decision by its name, with what the call resolved to and reached", () => {
    const rec = callRecord(
      { sessionId: "s", callId: "c", name: "call_tool", argumentsJson: "{}" },
      {
        decision: ToolDecision.STAGED,
        content: "staged",
        isError: false,
        rule: "default:write",
        proposalId: "p-1",
        blobSha256: "",
        durationMs: 1.23456,
        resolvedName: "write_file",
      },
      {
        paths: [{ input: "a.txt", root: "/w", rel: "a.txt", abs: "/w/a.txt", exists: true }],
        execute: async () => ({ text: "", isError: false }),
      },
    );
    expect(rec).toEqual({
      kind: "call",
      session: "s",
      call_id: "c",
      tool: "call_tool",
      resolved: "write_file",
      decision: "staged",
      rule: "default:write",
      duration_ms: 1.235,
      result_bytes: 6,
      is_error: false,
      proposal: "p-1",
      paths: ["a.txt"],
    });
  });
});
