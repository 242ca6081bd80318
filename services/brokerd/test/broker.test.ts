import { ToolDecision } from "@boxmaker/common";
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rig, type Rig } from "./helpers.js";
import { requires } from "../../../test/support/requirements.js";

const haveBwrap = requires("brokerd operator rules on commands", ["bwrap"]);

let r: Rig;
afterEach(async () => r && (await r.cleanup()));

describe("built-in tools under the default policy", () => {
  it("reads files whole and by line range, lists and searches", async () => {
    r = await rig();
    writeFileSync(join(r.ws, "a.txt"), "one\ntwo\nthree\n");
    expect((await r.call("read_file", { path: "a.txt" })).content).toBe("one\ntwo\nthree");
    const part = await r.call("read_file", { path: "a.txt", start_line: 2, end_line: 3 });
    expect(part).toMatchObject({ decision: ToolDecision.ALLOWED, rule: "default:read", isError: false });
    expect(part.content).toBe("[a.txt: lines 2-3 of 3]\ntwo\nthree");
    expect((await r.call("list_dir", {})).content).toBe("a.txt  14");
    expect((await r.call("search_files", { pattern: "t[wh]", glob: "*.txt" })).content).toBe(
      "a.txt:2: two\na.txt:3: three",
    );
    const bad = await r.call("search_files", { pattern: "(" });
    expect(bad).toMatchObject({ decision: ToolDecision.DENIED, isError: true });
    expect(bad.content).toMatch(/invalid regular expression/);
  });

  it("stages writes as proposals with a unified diff and applies them only on approval", async () => {
    r = await rig();
    writeFileSync(join(r.ws, "a.txt"), "one\ntwo\n");
    const res = await r.call("edit_file", { path: "a.txt", old_text: "two", new_text: "TWO" });
    expect(res).toMatchObject({ decision: ToolDecision.STAGED, rule: "default:write", isError: false });
    expect(res.content).toMatch(/NOT been applied/);
    expect(readFileSync(join(r.ws, "a.txt"), "utf8")).toBe("one\ntwo\n");
    const [p] = r.broker.listProposals("s1", false);
    expect(p!.id).toBe(res.proposalId);
    expect(p!.preview).toContain("--- a/a.txt\n+++ b/a.txt");
    expect(p!.preview).toContain("-two\n+TWO");
    const done = await r.broker.decideProposal(p!.id, true, "");
    expect(done.state).toBe("applied");
    expect(readFileSync(join(r.ws, "a.txt"), "utf8")).toBe("one\nTWO\n");
    expect(r.broker.listProposals("s1", false)).toEqual([]);
    expect(r.broker.listProposals("s1", true)).toHaveLength(1);
    await expect(r.broker.decideProposal(p!.id, true, "")).rejects.toThrow(/already applied/);
  });

  it("rejection leaves the disk alone", async () => {
    r = await rig();
    const res = await r.call("write_file", { path: "new.txt", content: "x" });
    const done = await r.broker.decideProposal(res.proposalId, false, "not now");
    expect(done).toMatchObject({ state: "rejected", result: "Rejected by a person: not now." });
    expect(existsSync(join(r.ws, "new.txt"))).toBe(false);
  });

  it("refuses an approval when the file changed since the diff", async () => {
    r = await rig();
    writeFileSync(join(r.ws, "a.txt"), "one\n");
    const res = await r.call("write_file", { path: "a.txt", content: "model\n" });
    writeFileSync(join(r.ws, "a.txt"), "person edited\n");
    const done = await r.broker.decideProposal(res.proposalId, true, "");
    expect(done.state).toBe("failed");
    expect(done.result).toMatch(/changed on disk since the diff/);
    expect(readFileSync(join(r.ws, "a.txt"), "utf8")).toBe("person edited\n");
  });

  it("edit_file must match exactly once", async () => {
    r = await rig();
    writeFileSync(join(r.ws, "a.txt"), "x\nx\n");
    expect((await r.call("edit_file", { path: "a.txt", old_text: "y", new_text: "z" })).content).toMatch(/not found/);
    expect((await r.call("edit_file", { path: "a.txt", old_text: "x", new_text: "z" })).content).toMatch(
      /more than one place/,
    );
    expect(r.broker.listProposals("s1", true)).toEqual([]);
  });

  it.skipIf(!haveBwrap)("operator rules can allow writes under a path and deny commands", async () => {
    r = await rig({
      policy: {
        rules: [
          { name: "scratch", tool: "write_file", effect: "allow", paths: ["scratch/**"] },
          { name: "no-curl", tool: "run_command", effect: "deny", command_prefixes: ["curl"] },
        ],
      },
    });
    const w = await r.call("write_file", { path: "scratch/n.txt", content: "hi\n" });
    expect(w).toMatchObject({ decision: ToolDecision.ALLOWED, rule: "scratch", isError: false });
    expect(readFileSync(join(r.ws, "scratch/n.txt"), "utf8")).toBe("hi\n");
    const c = await r.call("run_command", { command: "true && curl http://x" });
    expect(c).toMatchObject({ decision: ToolDecision.DENIED, rule: "no-curl" });
    expect(c.content).toMatch(/Denied by policy \(no-curl\)/);
  });

  it("a large result goes to the blob store; the model gets an excerpt and a working pointer", async () => {
    r = await rig({ result_cap_bytes: 2048 });
    const lines = Array.from({ length: 3000 }, (_, i) => `row ${i + 1}`);
    lines[1500] = "FATAL: disk on fire";
    writeFileSync(join(r.ws, "big.log"), lines.join("\n"));
    const res = await r.call("read_file", { path: "big.log" }, "s9");
    expect(res.blobSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(Buffer.byteLength(res.content)).toBeLessThanOrEqual(2048);
    expect(res.content).toContain(`blob:sha256:${res.blobSha256}`);
    expect(res.content).toContain("FATAL: disk on fire");
    // read_blob/grep_blob were disclosed with the pointer: call_tool works without find_tool.
    const more = await r.call(
      "call_tool",
      { name: "read_blob", arguments: { blob: `blob:sha256:${res.blobSha256}`, start_line: 2999, end_line: 3000 } },
      "s9",
    );
    expect(more).toMatchObject({ decision: ToolDecision.ALLOWED, resolvedName: "read_blob" });
    expect(more.content).toBe("[lines 2999-3000 of 3000]\nrow 2999\nrow 3000");
    const g = await r.call(
      "call_tool",
      { name: "grep_blob", arguments: { blob: res.blobSha256, pattern: "FATAL", context: 1 } },
      "s9",
    );
    expect(g.content).toBe("1500: row 1500\n1501: FATAL: disk on fire\n1502: row 1502");
  });

  it("find_tool discloses what it returns and call_tool then runs it", async () => {
    r = await rig();
    const before = await r.call("call_tool", { name: "read_blob", arguments: { blob: "x" } });
    expect(before).toMatchObject({ decision: ToolDecision.DENIED, rule: "call_tool:undisclosed" });
    expect(before.content).toMatch(/Call find_tool first/);
    const found = await r.call("find_tool", { query: "read a stored blob" });
    expect(found.content).toContain("read_blob");
    const after = await r.call("call_tool", { name: "read_blob", arguments: { blob: "x" } });
    expect(after).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "tool:invalid-call",
      resolvedName: "read_blob",
    });
    expect(after.content).toMatch(/not a blob reference/);
    // Disclosure is per session.
    expect((await r.call("call_tool", { name: "read_blob", arguments: { blob: "x" } }, "other")).rule).toBe(
      "call_tool:undisclosed",
    );
  });

  it("disclosure survives a brokerd restart", async () => {
    r = await rig();
    await r.call("find_tool", { query: "read a stored blob" });
    const { Broker } = await import("../src/broker.js");
    const { silent } = await import("./helpers.js");
    const again = await Broker.open(r.config, { log: silent });
    const call = (session: string) =>
      again.call({
        sessionId: session,
        callId: "c",
        name: "call_tool",
        argumentsJson: JSON.stringify({ name: "read_blob", arguments: { blob: "x" } }),
      });
    expect((await call("s1")).rule).toBe("tool:invalid-call");
    expect((await call("other")).rule).toBe("call_tool:undisclosed");
    await again.close();
  });

  it("call_tool reaches core tools too, and accepts arguments sent as a JSON string", async () => {
    r = await rig();
    writeFileSync(join(r.ws, "a.txt"), "hi");
    const res = await r.call("call_tool", { name: "read_file", arguments: JSON.stringify({ path: "a.txt" }) });
    expect(res).toMatchObject({ decision: ToolDecision.ALLOWED, content: "hi", resolvedName: "read_file" });
  });

  it("writes an audit line per call", async () => {
    r = await rig();
    await r.call("list_dir", {});
    await r.call("read_file", { path: "../x" });
    await r.broker.close(); // flushes the audit stream
    const lines = readFileSync(join(r.config.state_dir, "audit.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({
      kind: "call",
      session: "s1",
      tool: "list_dir",
      decision: "allowed",
      rule: "default:read",
      is_error: false,
    });
    expect(lines[1]).toMatchObject({
      tool: "read_file",
      decision: "denied",
      rule: "path:outside-workspace",
    });
    expect(typeof lines[0].duration_ms).toBe("number");
    expect(lines[0].result_bytes).toBeGreaterThan(0);
  });

  it("proposals survive a restart", async () => {
    r = await rig();
    const res = await r.call("write_file", { path: "n.txt", content: "x" });
    const { Broker } = await import("../src/broker.js");
    const { silent } = await import("./helpers.js");
    const again = await Broker.open(r.config, { log: silent });
    expect(again.listProposals("s1", false).map((p) => p.id)).toEqual([res.proposalId]);
    expect((await again.decideProposal(res.proposalId, true, "")).state).toBe("applied");
    await again.close();
    expect(readFileSync(join(r.ws, "n.txt"), "utf8")).toBe("x");
  });
});
