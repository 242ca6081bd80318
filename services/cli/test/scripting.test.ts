import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cliMain, daemonMain, runCli } from "../../../test/support/stack.js";
import { useStack } from "../../../test/support/use-stack.js";

// biome-ignore lint/suspicious/noControlCharactersInRegex: an escape sequence is what these tests look for.
const ANSI = /\x1b\[/;
type Event = Record<string, any>;
const events = (stdout: string): Event[] =>
  stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Event);

/** The CLI through pipes, as scripts use it: JSON lines, exit codes, stdin, plain output. */
describe("boxmaker through pipes", () => {
  const t = useStack("bxp-");

  /** A CLI process whose output can be watched while it runs. */
  function spawnCli(args: string[]) {
    const proc = spawn(process.execPath, [cliMain, ...args], {
      env: { ...process.env, NO_COLOR: "1", BOXMAKER_SOCKET: t.stack.sockets.loopd },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    proc.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
    const exited = once(proc, "exit").then(([code]) => code as number);
    return { proc, exited, stdout: () => stdout };
  }
  async function until(cond: () => boolean, what: string): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it("run --json prints one parseable event per line, content deltas through turn_done, and exits 0", async () => {
    t.stack.sim.enqueue({ reasoning: "thinking hard", content: "Hello from JSON." });
    const r = await t.stack.cli(["run", "--json", "say", "hello"]);
    expect(r.code).toBe(0);
    const evs = events(r.stdout);
    expect(evs[0]).toHaveProperty("turn_started");
    expect(
      evs
        .filter((e) => e.reasoning)
        .map((e) => e.reasoning.text)
        .join(""),
    ).toBe("thinking hard");
    expect(
      evs
        .filter((e) => e.content)
        .map((e) => e.content.text)
        .join(""),
    ).toBe("Hello from JSON.");
    const done = evs.at(-1)!;
    expect(done.turn_done).toMatchObject({ finish_reason: "stop", iterations: 1, final_text: "Hello from JSON." });
    expect(new Set(evs.map((e) => e.session_id)).size).toBe(1);
    expect(evs.map((e) => Number(e.seq))).toEqual([...evs.map((e) => Number(e.seq))].sort((a, b) => a - b));
  });

  it("exits 3 when a budget ends the turn (--max-iterations 1 with a tool call pending)", async () => {
    writeFileSync(join(t.stack.workspace, "budget.txt"), "x\n");
    t.stack.sim.enqueue({ toolCalls: [{ name: "read_file", arguments: '{"path": "budget.txt"}' }] });
    const r = await t.stack.cli(["run", "--json", "--max-iterations", "1", "read", "budget.txt"]);
    expect(r.code).toBe(3);
    const evs = events(r.stdout);
    expect(evs.find((e) => e.budget_breach)?.budget_breach).toMatchObject({
      budget: "iterations",
      limit: "1",
      used: "1",
    });
    expect(evs.at(-1)!.turn_done.finish_reason).toBe("budget");
  });

  it("exits 2 on usage errors", async () => {
    expect((await t.stack.cli(["run"])).code).toBe(2);
    expect((await t.stack.cli(["frobnicate"])).code).toBe(2);
    const bad = await t.stack.cli(["run", "--max-iterations", "lots", "hi"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--max-iterations needs a positive number, not "lots"');
    const cron = await t.stack.cli(["schedule", "add", "not a cron", "hi"]);
    expect(cron.code).toBe(2);
  });

  it("exits 6 with one line naming the socket and how to start the stack when loopd is missing", async () => {
    const socket = join(t.dir, "nope.sock");
    for (const via of [
      { args: ["--socket", socket, "ls"], env: {} },
      { args: ["status"], env: { BOXMAKER_SOCKET: socket } },
    ]) {
      const r = await runCli(via.args, { env: via.env });
      expect(r.code).toBe(6);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(`cannot reach loopd at ${socket} (no such socket)`);
      expect(r.stderr).toContain("boxmaker up");
    }
    // A socket file nobody listens on (a crashed daemon) gets the same line, not a gRPC error.
    writeFileSync(join(t.dir, "stale.sock"), "");
    const stale = await runCli(["ls"], { env: { BOXMAKER_SOCKET: join(t.dir, "stale.sock") } });
    expect(stale.code).toBe(6);
    expect(stale.stderr).toMatch(
      /^boxmaker: cannot reach loopd at \S+stale\.sock \(nothing is listening\); start the stack/,
    );
  });

  it("prints no escape sequences into a pipe even without NO_COLOR", async () => {
    t.stack.sim.enqueue({ reasoning: "r", toolCalls: [{ name: "list_dir", arguments: '{"path": "."}' }] });
    t.stack.sim.enqueue({ content: "Done." });
    const r = await t.stack.cli(["run", "--reasoning", "list"], {
      env: { NO_COLOR: undefined, FORCE_COLOR: undefined },
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("┌ list_dir");
    expect(r.stdout).toContain("thinking:");
    expect(r.stdout + r.stderr).not.toMatch(ANSI);
    const st = await t.stack.cli(["status"], { env: { NO_COLOR: undefined, FORCE_COLOR: undefined } });
    expect(st.stdout).not.toMatch(ANSI);
  });

  it("reads the prompt from stdin with -", async () => {
    t.stack.sim.enqueue({ content: "Read it." });
    const prompt = "line one from stdin\nline two";
    const r = await t.stack.cli(["run", "-"], { input: prompt });
    expect(r.code).toBe(0);
    const msgs = (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
    expect(msgs.at(-1)).toEqual({ role: "user", content: prompt });
    expect((await t.stack.cli(["run", "-"], { input: "  \n" })).code).toBe(2);
  });

  it("chat without a terminal sends one message per stdin line in one session", async () => {
    t.stack.sim.enqueue({ content: "First." });
    t.stack.sim.enqueue({ content: "Second." });
    const r = await t.stack.cli(["chat", "--json"], { input: "one\n\ntwo\n" });
    expect(r.code).toBe(0);
    const done = events(r.stdout).filter((e) => e.turn_done);
    expect(done.map((e) => e.turn_done.final_text)).toEqual(["First.", "Second."]);
    expect(new Set(events(r.stdout).map((e) => e.session_id)).size).toBe(1);
  });

  it("ls, show, status and tools print readable text and JSON", async () => {
    writeFileSync(join(t.stack.workspace, "facts.txt"), "the sky is green\n");
    t.stack.sim.enqueue({
      reasoning: "I should read the file.",
      toolCalls: [{ id: "call-f", name: "read_file", arguments: '{"path": "facts.txt"}' }],
    });
    t.stack.sim.enqueue({ content: "The file says the sky is green." });
    const run = await t.stack.cli(["run", "what", "colour", "is", "the", "sky?"]);
    expect(run.code).toBe(0);
    const id = /session (\S+)/.exec(run.stderr)![1]!;

    const ls = await t.stack.cli(["ls"]);
    expect(ls.stdout).toMatch(/^ID\s+STATE\s+ROLE\s+MSGS\s+CONTEXT\s+ACTIVE\s+TITLE$/m);
    expect(ls.stdout).toMatch(
      new RegExp(`^${id}\\s+idle\\s+main\\s+4\\s+\\d+\\s+\\S+ ago\\s+what colour is the sky\\?$`, "m"),
    );
    const lsJson = JSON.parse((await t.stack.cli(["ls", "--json"])).stdout);
    expect(lsJson.sessions.find((s: Event) => s.id === id)).toMatchObject({
      state: "idle",
      messages: 4,
      role: "SESSION_ROLE_MAIN",
    });

    const show = await t.stack.cli(["show", id]);
    expect(show.stdout).toContain("what colour is the sky?");
    expect(show.stdout).toContain("I should read the file.");
    // The call, its decision as the live view showed it, then its result.
    expect(show.stdout).toMatch(
      /┌ read_file \{"path": "facts.txt"\}\n\s+│ allowed \(default:read\)\n\s+│ the sky is green\n\s+└ ok/,
    );
    expect(show.stdout).toContain("The file says the sky is green.");
    expect((await t.stack.cli(["show", "--no-reasoning", id])).stdout).not.toContain("I should read the file.");
    const showJson = JSON.parse((await t.stack.cli(["show", "--json", id])).stdout);
    expect(showJson.session.id).toBe(id);
    expect(showJson.messages.map((m: Event) => m.message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect((await t.stack.cli(["show", "s-does-not-exist"])).code).toBe(1);

    const status = await t.stack.cli(["status"]);
    expect(status.code).toBe(0);
    for (const d of ["loopd", "inferproxy", "brokerd"])
      expect(status.stdout).toMatch(new RegExp(`✓\\s+${d}\\s+\\S+\\.sock\\s+ok`));
    expect(status.stdout).toMatch(/build\s+b1-llamasim/);
    expect(status.stdout).toMatch(/self-test\s+passed/);
    expect(status.stdout).toMatch(/^\s+0\s+main\s+idle/m);
    const statusJson = JSON.parse((await t.stack.cli(["status", "--json"])).stdout);
    expect(statusJson.infer.self_test.passed).toBe(true);
    expect(statusJson.slots.map((s: Event) => s.role)).toEqual(["main", "subagent", "scheduled"]);

    const tools = await t.stack.cli(["tools"]);
    expect(tools.stdout).toMatch(/^\s+read_file\s+read\s+Read a text file/m);
    expect(tools.stdout).toMatch(/^\s+write_file\s+write\s+/m);
    const toolsJson = JSON.parse((await t.stack.cli(["tools", "--json", "fetch", "url"])).stdout);
    expect(toolsJson.core.map((t: Event) => t.name)).toContain("find_tool");
    const searched = await t.stack.cli(["tools", toolsJson.matches[0]?.name ?? "zzz-nothing"]);
    expect(searched.stdout).toMatch(/find_tool "[^"]+": \d+ match/);
  });

  it("attach follows another client's running turn to its end; cancel ends a turn with exit 5", async () => {
    t.stack.sim.enqueue({ content: "tick ".repeat(60), tokenDelayMs: 15 });
    const runner = spawnCli(["run", "--json", "count", "slowly"]);
    await until(() => runner.stdout().includes('"content"'), "the turn to stream");
    const id = JSON.parse(runner.stdout().split("\n")[0]!).session_id as string;

    const attached = await t.stack.cli(["attach", id]);
    expect(attached.code).toBe(0);
    expect(attached.stdout).toContain("tick tick tick");
    expect(attached.stdout).toMatch(/— stop · 1 request/);
    expect(await runner.exited).toBe(0);

    const idle = await t.stack.cli(["attach", id]);
    expect(idle.code).toBe(0);
    expect(idle.stderr).toContain("no turn to attach to");

    t.stack.sim.enqueue({ content: "tock ".repeat(400), tokenDelayMs: 20 });
    const slow = spawnCli(["run", "tock", "forever"]);
    await until(() => slow.stdout().includes("tock tock"), "the slow turn to stream");
    const slowId = JSON.parse((await t.stack.cli(["ls", "--json"])).stdout).sessions.find(
      (s: Event) => s.title === "tock forever",
    ).id;
    const c = await t.stack.cli(["cancel", slowId]);
    expect(c.stdout).toBe(`cancelled the running turn of ${slowId}\n`);
    expect(await slow.exited).toBe(5);
    expect(slow.stdout()).toMatch(/— cancelled/);
    expect((await t.stack.cli(["cancel", "--json", slowId])).stdout.trim()).toBe('{"cancelled":false}');
  });

  it.each(["SIGTERM", "SIGHUP", "SIGINT"] as const)(
    "run stopped with %s cancels its turn, so the next run does not wait for the slot",
    async (sig) => {
      t.stack.sim.enqueue({ content: "slow ".repeat(400), tokenDelayMs: 20 });
      const slow = spawnCli(["run", "--json", "go", "slowly", sig]);
      await until(() => slow.stdout().includes('"content"'), "the slow turn to stream");
      slow.proc.kill(sig);
      expect(await slow.exited).toBe(5);
      t.stack.sim.enqueue({ content: "next" });
      const next = await t.stack.cli(["run", "--json", "next", "one"], { timeoutMs: 5_000 });
      expect(next.code).toBe(0);
      expect(next.stdout).not.toContain('"waiting"');
    },
  );

  it("--version prints the package version", async () => {
    const r = await t.stack.cli(["--version"]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
    for (const d of ["inferproxy", "brokerd", "loopd"] as const) {
      const p = spawn(process.execPath, [daemonMain(d), "--version"], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      p.stdout.on("data", (b: Buffer) => (out += b.toString()));
      const [code] = await once(p, "exit");
      expect([d, code, out.trim()]).toEqual([d, 0, r.stdout.trim()]);
    }
  });

  it("reject tells the waiting turn, leaves the file alone, and the run exits 4", async () => {
    t.stack.sim.enqueue({ toolCalls: [{ name: "write_file", arguments: '{"path": "nope.txt", "content": "x"}' }] });
    t.stack.sim.enqueue({ content: "Understood, I will not write it." });
    const runner = spawnCli(["run", "--json", "write", "nope.txt"]);
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
