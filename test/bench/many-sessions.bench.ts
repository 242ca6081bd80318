// loopd after a year of use: 5,000 session logs (300 of them long), then
// loopd's start-up (spawn to serving its socket) the first time and with its
// session index, `boxmaker ls` end to end, and loopd's resident memory.
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type LogRecord, SessionLog } from "../../services/loopd/dist/sessions/session-log.js";
import { Stack, runCli } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { p50 } from "./stats.mjs";
import { loopClient } from "../support/loop-client.js";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 150;

const SESSIONS = 5_000;
const LONG = 300;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

export default async function (emit: Emit): Promise<void> {
  const tmp = tempDir("bxb-ms-");
  const stack = await new Stack(tmp.dir).start();
  try {
    await stack.kill("loopd", "SIGTERM");
    const dir = join(tmp.dir, "state", "loopd", "sessions");
    mkdirSync(dir, { recursive: true });
    const t0 = performance.now();
    const bytes = writeSessions(dir);
    emit("sessions_written", SESSIONS, "sessions");
    emit("session_logs_mb", bytes / 1048576, "MB");
    process.stderr.write(
      `many-sessions: wrote ${SESSIONS} logs in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );

    // The first start reads every log (no index knows them); a clean stop writes the index, and
    // later starts list unchanged sessions from it.
    const starts: number[] = [];
    for (let i = 0; i < 4; i++) {
      const s0 = performance.now();
      await stack.startDaemon("loopd");
      // Serving, not just bound: the first ListSessions answered.
      const c = loopClient(stack.sockets.loopd);
      await c.listSessions({}, { waitForReady: true, timeoutMs: 30_000 });
      c.close();
      starts.push(performance.now() - s0);
      if (i < 3) await stack.kill("loopd", "SIGTERM");
    }
    emit("loopd_startup_ms_5000_sessions_first", starts[0]!, "ms");
    emit("loopd_startup_ms_5000_sessions", p50(starts.slice(1)), "ms");
    const ls: number[] = [];
    for (let i = 0; i < 5; i++) {
      const l0 = performance.now();
      const r = await stack.cli(["ls"]);
      if (r.code !== 0) throw new Error(`ls failed: ${r.stderr}`);
      ls.push(performance.now() - l0);
    }
    emit("ls_ms_5000_sessions", p50(ls), "ms");
    // Every session, as `ls -n 0` (and scripts' `ls --json`) ask for.
    const lsAll: number[] = [];
    for (let i = 0; i < 5; i++) {
      const l0 = performance.now();
      const r = await stack.cli(["ls", "-n", "0"]);
      if (r.code !== 0) throw new Error(`ls -n 0 failed: ${r.stderr}`);
      lsAll.push(performance.now() - l0);
    }
    emit("ls_all_ms_5000_sessions", p50(lsAll), "ms");
    const help: number[] = [];
    for (let i = 0; i < 5; i++) {
      const h0 = performance.now();
      await runCli(["--help"]);
      help.push(performance.now() - h0);
    }
    emit("ls_minus_cli_start_ms", p50(ls) - p50(help), "ms");
    emit("loopd_rss_mb_5000_sessions", rssMb(stack.daemons.get("loopd")!.proc.pid!), "MB");
  } finally {
    await stack.stop();
    tmp.cleanup();
  }
}

/**
 * 5,000 closed sessions: most a few turns, LONG of them ~200 exchanges (~100k tokens). Each log is
 * one write without fsync: what is measured is loopd reading them, and an fsync per record made
 * writing them take minutes (some 250,000 fsyncs) before anything was measured.
 */
function writeSessions(dir: string): number {
  const system = JSON.stringify({ role: "system", content: "You are a careful assistant." });
  const para = "The build failed after the dependency bump; the lockfile and the cache disagree about one version. ";
  let bytes = 0;
  for (let i = 0; i < SESSIONS; i++) {
    const id = `s-bench${String(i).padStart(5, "0")}`;
    const { log } = SessionLog.open(join(dir, `${id}.jsonl`));
    const at = Date.UTC(2025, 11, 1) + i * 3_600_000;
    const recs: LogRecord[] = [
      { t: "session", id, role: "main", title: `task ${i}`, parent_id: "", slot: 0, at },
      { t: "epoch", epoch: 0, system_json: system, tools_json: "[]", at },
    ];
    const exchanges = i < LONG ? 200 : 3;
    for (let k = 0; k < exchanges; k++) {
      const user = JSON.stringify({ role: "user", content: `Step ${k}: ${para.repeat(i < LONG ? 8 : 1)}` });
      const answer = JSON.stringify({
        role: "assistant",
        content: `Done with step ${k}. ${para.repeat(i < LONG ? 8 : 1)}`,
      });
      recs.push(
        { t: "turn_start", turn: k + 1, at },
        { t: "message", epoch: 0, json: user, at },
        { t: "message", epoch: 0, json: answer, at },
        { t: "turn_end", turn: k + 1, reason: "stop", at },
      );
      bytes += user.length + answer.length;
    }
    log.appendAll(recs, { durableWithNext: true });
    log.close();
  }
  return bytes;
}
