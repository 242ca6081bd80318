import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BrokerService, createClient, DAY_MS } from "@boxmaker/common";
import { Checkpoints } from "../../services/brokerd/src/checkpoints.js";
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
