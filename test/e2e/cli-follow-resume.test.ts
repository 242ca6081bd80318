import { describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cliArgv, waitFor } from "../support/stack.js";
import { useStack } from "../support/use-stack.js";

/**
 * loopd ends a Send or Follow stream more than 4,096 events behind with
 * RESOURCE_EXHAUSTED and the seq to resume after. `run`, `chat` and
 * `attach --follow` pick the stream up from there by themselves. Here each
 * CLI is a real process whose stdout the test stops reading during a burst
 * of 9,000 events (its writes block, so it stops reading loopd, as behind a
 * slow terminal or a paused pipe): once the turn is over and the output is
 * read again, every event of the turn is there exactly once and in order,
 * nothing about it is said, and the CLI did open a Follow of its own.
 */
const RECORDER = fileURLToPath(new URL("../support/h2-paths-recorder.mjs", import.meta.url));
const DELTAS = 9_000;
// About 250 bytes an event: past what the sockets and HTTP/2 windows hold plus loopd's bound,
// and within the 10,000 events loopd keeps of a turn, so a prompt resume loses nothing.
const burst = () => ({
  content: Array.from({ length: DELTAS }, (_, i) => `${String(i).padStart(6, "0")}${"w".repeat(234)} `),
  tokenDelayMs: 1,
});

type Cli = { proc: ChildProcess; stderr: () => string; paths: () => string[]; readAll: () => Promise<string> };

describe("the CLI resumes a stream loopd ended for falling behind", () => {
  const t = useStack("bxfr-", {
    sim: { nCtx: 1 << 20 },
    loopd: { max_tokens: 60_000, budgets: { max_total_tokens: 50_000_000 } },
  });
  let n = 0;

  /** A CLI whose stdout nobody reads until readAll. */
  function slowCli(args: string[], input = ""): Cli {
    const pathsFile = join(t.dir, `paths-${++n}.txt`);
    const proc = spawn(process.execPath, cliArgv(args), {
      env: {
        ...process.env,
        NO_COLOR: "1",
        BOXMAKER_SOCKET: t.stack.sockets.loopd,
        BX_H2_PATHS_FILE: pathsFile,
        NODE_OPTIONS: `--import ${RECORDER}`,
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let err = "";
    proc.stderr!.on("data", (b: Buffer) => (err += b.toString()));
    proc.stdin!.end(input);
    return {
      proc,
      stderr: () => err,
      paths: () => (existsSync(pathsFile) ? readFileSync(pathsFile, "utf8").split("\n").filter(Boolean) : []),
      readAll: () =>
        new Promise((resolve) => {
          let out = "";
          proc.stdout!.on("data", (b: Buffer) => (out += b.toString()));
          proc.stdout!.once("end", () => resolve(out));
        }),
    };
  }

  async function runningSession(title: string): Promise<string> {
    let id = "";
    await waitFor(
      () => {
        void t.client.listSessions({}).then((r) => {
          id = r.sessions.find((s) => s.title === title && s.state === "running")?.id ?? id;
        });
        return id !== "";
      },
      60_000,
      `a running session titled ${title}`,
    );
    return id;
  }

  async function turnOver(id: string): Promise<{ first: bigint; last: bigint }> {
    for (;;) {
      const s = (await t.client.getSession({ id })).session!;
      if (s.state !== "running") return { first: s.turnStartedSeq, last: s.lastEventSeq };
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The seqs of the --json lines, each checked to be one of the turn's events. */
  const seqsOf = (out: string) =>
    out
      .split("\n")
      .filter(Boolean)
      .map((l) => BigInt((JSON.parse(l) as { seq: string }).seq));
  const range = (a: bigint, b: bigint) => Array.from({ length: Number(b - a) + 1 }, (_, i) => a + BigInt(i));
  const follows = (c: Cli) => c.paths().filter((p) => p === "/boxmaker.v1.LoopService/Follow").length;
  const quiet = (c: Cli) => expect(c.stderr()).not.toMatch(/behind|resum|RESOURCE|no longer held|after_seq/i);

  it("run --json and attach --follow --json, both stalled through one burst", async () => {
    t.stack.sim.enqueue(burst());
    const run = slowCli(["run", "--json", "burst for run"]);
    const id = await runningSession("burst for run");
    const attach = slowCli(["attach", "--follow", "--json", id]);
    // attach has its stream open before most of the burst is out.
    await waitFor(() => follows(attach) >= 1, 30_000, "attach to open its Follow");
    const { first, last } = await turnOver(id);
    expect(Number(last - first)).toBeGreaterThan(DELTAS / 2);

    const [runOut, attachOut] = [run.readAll(), attach.readAll()];
    const [runCode] = (await once(run.proc, "exit")) as [number];
    expect(runCode, run.stderr()).toBe(0);
    expect(seqsOf(await runOut)).toEqual(range(first, last));
    quiet(run);
    expect(follows(run), "run never resumed: the burst did not make it fall behind").toBeGreaterThanOrEqual(1);

    // attach --follow keeps watching after the turn: it has shown the whole turn, then it is stopped.
    await waitFor(() => follows(attach) >= 2, 30_000, "attach to resume");
    await new Promise((r) => setTimeout(r, 500));
    attach.proc.kill("SIGINT");
    await once(attach.proc, "exit");
    expect(seqsOf(await attachOut)).toEqual(range(first, last));
    quiet(attach);
    console.log(
      `cli-follow-resume: ${last - first + 1n} events; run opened ${follows(run)} Follow, attach ${follows(attach)}`,
    );
  }, 180_000);

  it("chat --json, stalled through a burst", async () => {
    t.stack.sim.enqueue(burst());
    const chat = slowCli(["chat", "--json"], "burst for chat\n");
    const id = await runningSession("burst for chat");
    const { first, last } = await turnOver(id);
    const out = chat.readAll();
    const [code] = (await once(chat.proc, "exit")) as [number];
    expect(code, chat.stderr()).toBe(0);
    expect(seqsOf(await out)).toEqual(range(first, last));
    quiet(chat);
    expect(follows(chat), "chat never resumed: the burst did not make it fall behind").toBeGreaterThanOrEqual(1);
  }, 180_000);
});
