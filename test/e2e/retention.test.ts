import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BrokerService, createClient, createLogger, DAY_MS } from "@boxmaker/common";
import { Checkpoints } from "../../services/brokerd/src/checkpoints.js";
import { SessionStore } from "../../services/loopd/src/sessions/session-store.js";
import { loopClient, type LoopClient } from "../support/loop-client.js";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";

const change = (session: string, i: number, ws: string) => ({
  session_id: session,
  call_id: `c${i}`,
  tool: "write_file",
  proposal_id: "",
  root: ws,
  rel: `f${i}.txt`,
  abs: join(ws, `f${i}.txt`),
});

/**
 * brokerd's checkpoints as an operator meets them: a store written over
 * months, a brokerd started with a retention, and `boxmaker status` saying
 * what is kept, its size and the limit.
 */
describe("checkpoints retention, through a real brokerd", () => {
  let tmp: ReturnType<typeof tempDir>;
  let stack: Stack;
  let c: LoopClient;
  let oldAfter: string;
  const cpDir = () => join(tmp.dir, "state", "broker", "checkpoints");

  beforeAll(async () => {
    tmp = tempDir("bxret-");
    const ws = join(tmp.dir, "ws");
    // Written by the same store brokerd uses, then the "old" session's changes moved 45 days back.
    const cp = new Checkpoints(cpDir());
    oldAfter = cp.record(change("s-old", 1, ws), null, "written long ago").after_sha256;
    cp.record(change("s-old", 2, ws), "a", "b");
    cp.record(change("s-now", 3, ws), null, "written today");
    const log = join(cpDir(), "changes.jsonl");
    writeFileSync(
      log,
      readFileSync(log, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => {
          const r = JSON.parse(l) as { c: { session_id: string; applied_unix_ms: number } };
          if (r.c.session_id === "s-old") r.c.applied_unix_ms -= 45 * DAY_MS;
          return `${JSON.stringify(r)}\n`;
        })
        .join(""),
    );
    stack = await new Stack(tmp.dir, { brokerd: { checkpoints: { keep_days: 30, keep_sessions: 500 } } }).start();
    c = loopClient(stack.sockets.loopd);
  });

  afterAll(async () => {
    c?.close();
    await stack?.stop();
    tmp?.cleanup();
  });

  it("at start, a session untouched past keep_days loses its checkpoints on disk; the recent one keeps its diff", async () => {
    // Asked of brokerd itself: loopd answers only for sessions it has, and these were never its.
    const broker = createClient(BrokerService, stack.sockets.brokerd);
    expect((await broker.listChanges({ sessionId: "s-old" })).changes).toEqual([]);
    const now = (await broker.listChanges({ sessionId: "s-now" })).changes;
    broker.close();
    expect(now).toHaveLength(1);
    expect(now[0]!.diff).toContain("+written today");
    expect(existsSync(join(cpDir(), "content", oldAfter.slice(0, 2), oldAfter))).toBe(false);
    expect(readFileSync(join(cpDir(), "changes.jsonl"), "utf8")).not.toContain("s-old");
  });

  it("status shows each store a retention bounds: what is kept, its size, the limit and the keys", async () => {
    const st = await stack.cli(["status"]);
    expect(st.code).toBe(0);
    expect(st.stdout).toMatch(
      /checkpoints\s+\d+(\.\d)? (B|KiB), 1 change in 1 session; kept 30 days, at most the newest 500 sessions, then deleted, 2 deleted since start \(checkpoints\.keep_days, checkpoints\.keep_sessions\)/,
    );
    expect(st.stdout).toMatch(
      /decided proposals\s+0 B, 0 proposals; kept 30 days, at most the newest 10000 proposals, then deleted \(proposals\.keep_decided_days, proposals\.keep_decided_max\)/,
    );
  });
});

/**
 * loopd's session logs as an operator meets them: logs of sessions archived a
 * month ago and untouched for a season, a loopd started over them, and the
 * sessions still there to show, list and remove, their logs compressed.
 */
describe("session log compression, through a real loopd", () => {
  let tmp: ReturnType<typeof tempDir>;
  let stack: Stack;
  const ids: Record<string, string> = {};
  const sessionsDir = () => join(tmp.dir, "state", "loopd", "sessions");

  beforeAll(async () => {
    tmp = tempDir("bxlog-");
    // Written by the store loopd uses, with the ages of a year's work.
    const store = new SessionStore(join(tmp.dir, "state", "loopd"), createLogger("test", "silent"));
    store.loadAll();
    const now = Date.now();
    const seed = (title: string, daysAgo: number, archived: boolean) => {
      const at = now - daysAgo * DAY_MS;
      const s = store.create({
        role: "main",
        title,
        parentId: "",
        slot: 0,
        systemJson: '{"role":"system","content":"sys"}',
        toolsJson: "[]",
      });
      s.append({ t: "turn_start", turn: 1, at });
      s.append({ t: "message", epoch: 0, json: JSON.stringify({ role: "user", content: `what ${title} asked` }), at });
      s.append({
        t: "message",
        epoch: 0,
        json: JSON.stringify({ role: "assistant", content: `what ${title} was told` }),
        at,
      });
      s.append({ t: "turn_end", turn: 1, reason: "stop", at });
      if (archived) s.append({ t: "archived", at });
      ids[title] = s.id;
    };
    seed("archived long ago", 45, true);
    seed("archived last week", 7, true);
    seed("untouched all season", 120, false);
    seed("from yesterday", 1, false);
    store.closeAll();
    stack = await new Stack(tmp.dir).start();
  });

  afterAll(async () => {
    await stack?.stop();
    tmp?.cleanup();
  });

  it("at start, the archived and the long-idle logs are compressed; status counts them; show and rm work on them as before", async () => {
    const files = readdirSync(sessionsDir());
    expect(files.filter((f) => f.endsWith(".jsonl.gz")).sort()).toEqual(
      [`${ids["archived long ago"]}.jsonl.gz`, `${ids["untouched all season"]}.jsonl.gz`].sort(),
    );
    expect(files).toContain(`${ids["archived last week"]}.jsonl`);
    expect(files).toContain(`${ids["from yesterday"]}.jsonl`);

    const st = await stack.cli(["status"]);
    expect(st.stdout).toMatch(
      /archived session logs\s+\S+ \S+, 2 logs, 1 compressed; compressed 30 days after their last record, never deleted \(session_logs\.compress_archived_after_days\)/,
    );
    expect(st.stdout).toMatch(
      /other session logs\s+\S+ \S+, 2 logs, 1 compressed; compressed 90 days after their last record, never deleted \(session_logs\.compress_idle_after_days\)/,
    );

    const ls = await stack.cli(["ls", "--all"]);
    for (const title of Object.keys(ids)) expect(ls.stdout).toContain(title);
    const show = await stack.cli(["show", ids["archived long ago"]!]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("what archived long ago was told");
    // Shown, so read back plain.
    expect(existsSync(join(sessionsDir(), `${ids["archived long ago"]}.jsonl`))).toBe(true);

    const rm = await stack.cli(["rm", "--yes", ids["untouched all season"]!]);
    expect(rm.code).toBe(0);
    expect(readdirSync(sessionsDir()).filter((f) => f.startsWith(ids["untouched all season"]!))).toEqual([]);
  });
});
