// The CLI through pipes, as scripts use it: JSON lines, exit codes, stdin, plain output, signals.
import { describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { daemonMain, runCli } from "../../../test/support/stack.js";
import { useStack } from "../../../test/support/use-stack.js";
import { ANSI, events, spawnCli, until, type JsonEvent } from "./support/cli-process.js";

describe("boxmaker through pipes", () => {
  const t = useStack("bxp-");

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
      { args: ["--socket", socket, "ls"], env: {}, from: "--socket" },
      { args: ["status"], env: { BOXMAKER_SOCKET: socket }, from: "BOXMAKER_SOCKET" },
    ]) {
      const r = await runCli(via.args, { env: via.env });
      expect(r.code).toBe(6);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toContain(`cannot reach loopd at ${socket} (from ${via.from}): no such socket`);
      expect(r.stderr).toContain("boxmaker up");
    }
    // A socket file nobody listens on (a crashed daemon) gets the same line, not a gRPC error.
    writeFileSync(join(t.dir, "stale.sock"), "");
    const stale = await runCli(["ls"], { env: { BOXMAKER_SOCKET: join(t.dir, "stale.sock") } });
    expect(stale.code).toBe(6);
    expect(stale.stderr).toMatch(
      /^boxmaker: cannot reach loopd at \S+stale\.sock \(from BOXMAKER_SOCKET\): nobody is listening .*; no stack is running: start one with `boxmaker up`/,
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
    expect(lsJson.sessions.find((s: JsonEvent) => s.id === id)).toMatchObject({
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
    expect(showJson.messages.map((m: JsonEvent) => m.message.role)).toEqual(["user", "assistant", "tool", "assistant"]);
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
    expect(statusJson.slots.map((s: JsonEvent) => s.role)).toEqual(["main", "subagent", "scheduled"]);

    const tools = await t.stack.cli(["tools"]);
    expect(tools.stdout).toMatch(/^\s+read_file\s+read\s+Read a text file/m);
    expect(tools.stdout).toMatch(/^\s+write_file\s+write\s+/m);
    const toolsJson = JSON.parse((await t.stack.cli(["tools", "--json", "fetch", "url"])).stdout);
    expect(toolsJson.core.map((t: JsonEvent) => t.name)).toContain("find_tool");
    const searched = await t.stack.cli(["tools", toolsJson.matches[0]?.name ?? "zzz-nothing"]);
    expect(searched.stdout).toMatch(/find_tool "[^"]+": \d+ match/);
  });

  it("attach follows another client's running turn to its end; cancel ends a turn with exit 5", async () => {
    t.stack.sim.enqueue({ content: "tick ".repeat(60), tokenDelayMs: 15 });
    const runner = spawnCli(t.stack, ["run", "--json", "count", "slowly"]);
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
    const slow = spawnCli(t.stack, ["run", "tock", "forever"]);
    await until(() => slow.stdout().includes("tock tock"), "the slow turn to stream");
    const slowId = JSON.parse((await t.stack.cli(["ls", "--json"])).stdout).sessions.find(
      (s: JsonEvent) => s.title === "tock forever",
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
      const slow = spawnCli(t.stack, ["run", "--json", "go", "slowly", sig]);
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
});
