// The CLI through pipes: approvals, schedules, session administration, project instructions, help.
import { describe, expect, it } from "vitest";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runCli } from "../../../test/support/stack.js";
import { useStack } from "../../../test/support/use-stack.js";
import { events, spawnCli, until } from "./support/cli-process.js";

describe("boxmaker through pipes: administration", () => {
  const t = useStack("bxp-");

  it("reject tells the waiting turn, leaves the file alone, and the run exits 4", async () => {
    t.stack.sim.enqueue({ toolCalls: [{ name: "write_file", arguments: '{"path": "nope.txt", "content": "x"}' }] });
    t.stack.sim.enqueue({ content: "Understood, I will not write it." });
    const runner = spawnCli(t.stack, ["run", "--json", "write", "nope.txt"]);
    await until(() => runner.stdout().includes("TOOL_DECISION_STAGED"), "the staged decision");
    const decision = events(runner.stdout()).find((e) => e.tool_decision)!.tool_decision;
    // `proposals` lists what waits: id, session, tool, a one-line preview, its age.
    const listed = await t.stack.cli(["proposals"]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^${decision.proposal_id}\\s+s-\\S+\\s+write_file\\s+\\d+s ago\\s+nope\\.txt \\(\\+1 -0\\)$`, "m"),
    );
    // Without a terminal nobody can be asked: --yes is required.
    const unconfirmed = await t.stack.cli(["reject", decision.proposal_id]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain("reject without a terminal needs --yes (-y)");
    const r = await t.stack.cli(["reject", "-y", "--json", decision.proposal_id, "--reason", "not today"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ id: decision.proposal_id, state: "rejected", tool: "write_file" });
    expect(r.stderr).toContain("+++ b/nope.txt");
    expect(await runner.exited).toBe(4);
    expect(events(runner.stdout()).find((e) => e.tool_result)!.tool_result).toMatchObject({ is_error: true });
    expect(existsSync(join(t.stack.workspace, "nope.txt"))).toBe(false);
    const again = await t.stack.cli(["approve", "--yes", decision.proposal_id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("already decided (rejected)");
  });

  it("schedule add, ls and rm", async () => {
    const added = JSON.parse(
      (await t.stack.cli(["schedule", "add", "--json", "30 6 * * *", "water", "the", "plants"])).stdout,
    );
    expect(added).toMatchObject({ cron: "30 6 * * *", prompt: "water the plants" });
    const ls = await t.stack.cli(["schedule", "ls"]);
    expect(ls.stdout).toMatch(new RegExp(`^${added.id}\\s+30 6 \\* \\* \\*\\s+.*water the plants$`, "m"));
    expect(ls.stdout).toMatch(
      new RegExp(`^${added.id}\\s+30 6 \\* \\* \\*\\s+never\\s+\\d{4}-\\d\\d-\\d\\d \\d\\d:30`, "m"),
    );
    const four = await t.stack.cli(["schedule", "add", "* * * *", "hi"]);
    expect(four.code).toBe(2);
    expect(four.stderr).toContain("has 4 fields; a schedule needs five");
    const rm = await t.stack.cli(["schedule", "rm", added.id]);
    expect(rm).toMatchObject({ code: 0, stdout: `removed schedule ${added.id}\n` });
    expect((await t.stack.cli(["schedule", "rm", added.id])).code).toBe(1);
  });

  it("ls shows the most recently active sessions up to -n, says how many more there are, and --json lists all", async () => {
    const ids: string[] = [];
    for (const word of ["alpha", "beta", "gamma"]) {
      t.stack.sim.enqueue({ content: `ok ${word}` });
      const run = await t.stack.cli(["run", "--json", word]);
      ids.push(events(run.stdout)[0]!.session_id as string);
    }
    const two = await t.stack.cli(["ls", "-n", "2"]);
    expect(two.code).toBe(0);
    const rows = two.stdout.trim().split("\n").slice(1);
    expect(rows.map((r) => r.split(/\s+/)[0])).toEqual([ids[2], ids[1]]);
    const total = JSON.parse((await t.stack.cli(["ls", "--json"])).stdout).sessions.length as number;
    expect(total).toBeGreaterThanOrEqual(3);
    expect(two.stderr).toBe(`2 of ${total} sessions shown; boxmaker ls -n 0 lists them all\n`);
    const limited = JSON.parse((await t.stack.cli(["ls", "--json", "-n", "1"])).stdout);
    expect(limited.sessions.map((x: { id: string }) => x.id)).toEqual([ids[2]]);
    expect(limited.total).toBe(total);
    const all = await t.stack.cli(["ls", "-n", "0"]);
    expect(all.stdout.trim().split("\n")).toHaveLength(total + 1);
    expect(all.stderr).toBe("");
    const bad = await t.stack.cli(["ls", "-n", "some"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--limit needs a whole number >= 0, not "some"');
  });

  it("rename, export (md and jsonl), archive and rm a session; schedule run starts one now", async () => {
    writeFileSync(join(t.stack.workspace, "life.txt"), "alive\n");
    t.stack.sim.enqueue({
      reasoning: "look first",
      toolCalls: [{ id: "c-life", name: "read_file", arguments: '{"path": "life.txt"}' }],
    });
    t.stack.sim.enqueue({ content: "It says alive." });
    const run = await t.stack.cli(["run", "--json", "read", "life.txt"]);
    const id = events(run.stdout)[0]!.session_id as string;

    const renamed = await t.stack.cli(["rename", id, "reading", "life"]);
    expect(renamed.stdout).toBe(`session ${id} is now "reading life"\n`);
    // Every command that reports something does so as JSON too.
    expect(JSON.parse((await t.stack.cli(["rename", "--json", id, "reading", "life"])).stdout)).toMatchObject({
      id,
      title: "reading life",
    });
    expect(JSON.parse((await t.stack.cli(["mode", "--json", id])).stdout)).toEqual({
      session: id,
      mode: "ask",
      previous: "ask",
    });
    expect(JSON.parse((await t.stack.cli(["mode", id, "auto-edit", "--json"])).stdout)).toEqual({
      session: id,
      mode: "auto-edit",
      previous: "ask",
    });
    expect((await t.stack.cli(["mode", id, "ask"])).stdout).toContain(`${id}: mode ask (was auto-edit)`);
    // A unique prefix of a session id is enough wherever one is taken; an ambiguous one says so.
    const prefix = id.slice(0, id.length - 3);
    expect((await t.stack.cli(["show", prefix])).stdout).toContain("read life.txt");
    expect(JSON.parse((await t.stack.cli(["mode", "--json", prefix])).stdout)).toMatchObject({ session: id });
    expect((await t.stack.cli(["export", prefix])).stdout).toMatch(/^# reading life\n/);
    expect((await t.stack.cli(["changes", prefix])).code).toBe(0);
    const ambiguous = await t.stack.cli(["show", "s-"]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/"s-" matches \d+ sessions \(s-.*\); give more of the id/);
    expect((await t.stack.cli(["proposals", "-s", "s-nope"])).stderr).toContain("no session s-nope");
    const md = await t.stack.cli(["export", id, "--reasoning"]);
    expect(md.code).toBe(0);
    expect(md.stdout).toMatch(/^# reading life\n/);
    expect(md.stdout).toContain("## You");
    expect(md.stdout).toContain("read life.txt");
    expect(md.stdout).toContain("### Tool call: `read_file`");
    expect(md.stdout).toMatch(/Decision: allowed/);
    expect(md.stdout).toContain("alive");
    expect(md.stdout).toContain("look first");
    expect(md.stdout).toContain("It says alive.");
    expect((await t.stack.cli(["export", id])).stdout).not.toContain("look first");
    const jl = (await t.stack.cli(["export", "--format", "jsonl", id])).stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(jl.map((x) => x.message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(jl[2]).toMatchObject({ decision: "allowed", is_error: false });

    expect((await t.stack.cli(["archive", id])).stdout).toContain(`archived session ${id}`);
    expect((await t.stack.cli(["ls"])).stdout).not.toContain(id);
    expect((await t.stack.cli(["ls", "-a"])).stdout).toContain(id);
    const unconfirmed = await t.stack.cli(["rm", id]);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain("rm without a terminal needs --yes");
    expect(await t.stack.cli(["rm", "-y", id])).toMatchObject({ code: 0, stdout: `deleted session ${id}\n` });
    t.stack.sim.enqueue({ content: "Short-lived." });
    const other = events((await t.stack.cli(["run", "--json", "hi"])).stdout)[0]!.session_id as string;
    expect(JSON.parse((await t.stack.cli(["rm", "-y", "--json", other.slice(0, -2)])).stdout)).toEqual({
      session: other,
      deleted: true,
    });
    expect((await t.stack.cli(["ls", "-a"])).stdout).not.toContain(id);
    expect((await t.stack.cli(["show", id])).code).toBe(1);

    t.stack.sim.enqueue({ content: "Scheduled hello." });
    const added = JSON.parse((await t.stack.cli(["schedule", "add", "--json", "0 3 * * *", "say", "hello"])).stdout);
    const started = await t.stack.cli(["schedule", "run", added.id]);
    expect(started.stdout).toMatch(/^started session s-\S+; `boxmaker attach s-\S+` to watch it\n$/);
    const ls = await t.stack.cli(["schedule", "ls"]);
    expect(ls.stdout).not.toMatch(new RegExp(`^${added.id}.*never`, "m"));
    expect((await t.stack.cli(["schedule", "run", "sch-nope"])).stderr).toContain("no schedule sch-nope");
    await t.stack.cli(["schedule", "rm", added.id]);
  });

  it("puts AGENTS.md at the workspace root into a new session's system prompt; show and status name it", async () => {
    const file = join(t.stack.workspace, "AGENTS.md");
    writeFileSync(file, "Always answer in haiku.\n");
    try {
      t.stack.sim.enqueue({ content: "Five seven five." });
      const r = await t.stack.cli(["run", "hello"]);
      expect(r.stderr).toContain(`project instructions from ${file}`);
      const sys = (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] })
        .messages[0]!;
      expect(sys.role).toBe("system");
      expect(sys.content).toContain(`# Project instructions (from ${file})\n\nAlways answer in haiku.`);
      const id = /session (s-\S+)/.exec(r.stderr)![1]!;
      expect((await t.stack.cli(["show", id])).stdout).toContain(`project instructions: ${file}`);
      expect(JSON.parse((await t.stack.cli(["show", "--json", id])).stdout).session.instructions_file).toBe(file);
      expect((await t.stack.cli(["status"])).stdout).toMatch(
        new RegExp(`^instructions {2}${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"),
      );
    } finally {
      rmSync(file);
    }
    expect((await t.stack.cli(["status"])).stdout).toMatch(
      /^instructions {2}none \(no instructions file at the workspace root\)$/m,
    );
  });

  it("every command has --help with examples", async () => {
    for (const cmd of [
      "run",
      "chat",
      "ls",
      "show",
      "attach",
      "cancel",
      "approve",
      "reject",
      "proposals",
      "status",
      "tools",
      "schedule",
      "archive",
      "rm",
      "rename",
      "export",
    ]) {
      const r = await runCli([cmd, "--help"]);
      expect(r.code, cmd).toBe(0);
      expect(r.stdout, cmd).toContain("Examples:");
    }
    const top = await runCli(["--help"]);
    expect(top.stdout).toContain("Exit codes:");
  });
});
