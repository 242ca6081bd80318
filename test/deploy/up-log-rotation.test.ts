// `boxmaker up` keeps each process's log in the state dir within --log-max-size:
// a real stack on the simulator, brokerd made to log a lot (an MCP server that
// talks on stderr, logged at debug), brokerd killed half-way and restarted by
// the supervisor, and what is on disk and in `status` afterwards.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot, runCli, waitFor } from "../support/stack.js";
import { Up, stopUp } from "../support/up-process.js";
import { tempDir } from "../support/tmp.js";

const CHATTY = join(repoRoot, "test/support/chatty-mcp-server.mjs");
const LIMIT = 64 * 1024;
const KEEP = 3;
const ROUNDS = 8;
/** Each round is more than the limit, so each ends in at least one rotation. */
const ROUND_BYTES = 80 * 1024;

describe("boxmaker up rotates the processes' logs", () => {
  let tmp: ReturnType<typeof tempDir>;
  let up: Up;
  let logs: string;
  let progress: string;
  let env: Record<string, string>;
  const rounds = () => (existsSync(progress) ? Number(readFileSync(progress, "utf8")) : 0);
  const brokerdFiles = () =>
    readdirSync(logs)
      .filter((f) => f.startsWith("brokerd.log"))
      .sort();
  /** A file's text, gunzipped when it is compressed. */
  const text = (f: string) => {
    const b = readFileSync(join(logs, f));
    return (f.endsWith(".gz") ? gunzipSync(b) : b).toString("utf8");
  };

  beforeAll(async () => {
    tmp = tempDir("bx-logrot-");
    const ws = join(tmp.dir, "ws");
    const xdg = join(tmp.dir, "xdg");
    mkdirSync(ws);
    mkdirSync(xdg, { mode: 0o700 });
    const state = join(tmp.dir, "state");
    logs = join(state, "logs");
    progress = join(tmp.dir, "chatty-rounds");
    const overrides = join(tmp.dir, "overrides.json");
    const args = [join(logs, "brokerd.log"), String(LIMIT), String(ROUNDS), String(ROUND_BYTES), progress];
    writeFileSync(
      overrides,
      JSON.stringify({
        brokerd: {
          mcp_servers: {
            chatty: { transport: "stdio", command: process.execPath, args: [CHATTY, ...args], sandbox: false },
          },
        },
      }),
    );
    // Its own runtime dir for the stack record, so `status` below finds this stack's and no other's.
    env = { XDG_RUNTIME_DIR: xdg, BOXMAKER_SOCKET: join(tmp.dir, "run", "loopd.sock") };
    up = new Up(
      [
        "--llama-sim",
        "--sandbox",
        "none",
        "--runtime-dir",
        join(tmp.dir, "run"),
        "--state-dir",
        state,
        "--workspace",
        ws,
        "--overrides",
        overrides,
        "--log-level",
        "debug",
        "--log-max-size",
        "64K",
        "--log-keep",
        String(KEEP),
      ],
      tmp.dir,
      { ...process.env, ...env },
    );
    await up.ready(60_000);
  }, 90_000);
  afterAll(async () => {
    if (up) await stopUp(up);
    tmp.cleanup();
  });

  it("keeps brokerd's log within the limit, with N older files, the oldest deleted, across a restart", async () => {
    expect(up.stdout).toMatch(/^ {2}logs +\S+\/logs, each rotated past 64\.0 KiB, 3 older kept/m);
    // Half-way, brokerd dies hard; the supervisor restarts it and the restarted one reopens the same log.
    await waitFor(() => rounds() >= ROUNDS / 2, 60_000, "half the rounds");
    process.kill(up.pid("brokerd"), "SIGKILL");
    await waitFor(() => up.stderr.includes("brokerd restarted and ready"), 30_000, "brokerd's restart");

    await waitFor(() => rounds() === ROUNDS, 90_000, `${ROUNDS} rounds of ${ROUND_BYTES} bytes`);
    // The last rotation's compression of the new .2 may still be running.
    const expected = ["brokerd.log", "brokerd.log.1", "brokerd.log.2.gz", "brokerd.log.3.gz"];
    await waitFor(() => brokerdFiles().join() === expected.join(), 15_000, "the last rotation");

    const sizes = Object.fromEntries(expected.map((f) => [f, Buffer.byteLength(text(f))]));
    expect(sizes["brokerd.log"]).toBeLessThanOrEqual(LIMIT);
    for (const f of expected.slice(1)) {
      // Rotated once past the limit, and not much later: the writer waits for each rotation, so a file holds at
      // most the limit and a round (two across the restart: the killed writer's part round, then the new one's).
      expect(sizes[f], f).toBeGreaterThan(LIMIT);
      expect(sizes[f], f).toBeLessThan(LIMIT + 3 * ROUND_BYTES);
    }
    // Compressed on disk: the padding compresses to almost nothing.
    for (const f of ["brokerd.log.2.gz", "brokerd.log.3.gz"])
      expect(readFileSync(join(logs, f)).length).toBeLessThan(sizes[f]! / 10);
    const all = expected.map(text).join("");
    // Written: 8 rounds of 80 KiB and more; kept: at most 4 files' worth. The first rounds are gone, the last is there.
    expect(all).not.toContain("chatty round 0 ");
    expect(all).not.toContain("chatty round 1 ");
    expect(all).toContain(`chatty round ${ROUNDS - 1} `);
    // Nothing past N for any process.
    expect(readdirSync(logs).filter((f) => /\.log\.([4-9]|\d{2,})(\.gz)?$/.test(f))).toEqual([]);

    const st = await runCli(["status"], { env });
    expect(st.stderr).toBe("");
    expect(st.stdout).toMatch(/^ {2}brokerd\.log +[\d.]+ (B|KiB) of 64\.0 KiB; 3 older files, [\d.]+ KiB$/m);
    expect(st.stdout).toMatch(/^ {2}loopd\.log +[\d.]+ (B|KiB) of 64\.0 KiB$/m);
    expect(st.stdout).toMatch(/^ {2}rotation +past 64\.0 KiB a log is moved to \.1 … \.3 \(\.2 on gzip-compressed\)/m);
    const js = JSON.parse((await runCli(["status", "--json"], { env })).stdout) as {
      stack: { logs: { dir: string; max_bytes: number; keep_files: number; files: Array<Record<string, unknown>> } };
    };
    expect(js.stack.logs).toMatchObject({ dir: logs, max_bytes: LIMIT, keep_files: KEEP, compress: true });
    expect(js.stack.logs.files.map((f) => f.name)).toEqual([
      "llama-sim.log",
      "inferproxy.log",
      "brokerd.log",
      "loopd.log",
    ]);
    expect(js.stack.logs.files.find((f) => f.name === "brokerd.log")).toMatchObject({ older_files: KEEP });
  }, 240_000);
});
