import { afterEach, describe, expect, it } from "vitest";
import { readdirSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Stack, waitFor } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { doneOf, loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";

/**
 * Parked slot files are gigabytes each on the real server. With the three
 * daemons as processes and the simulator as llama-server (which, like the
 * real one, writes save files and never deletes one), sessions park, are
 * deleted and archived, inferproxy and loopd are killed and restarted, and the
 * slot-save directory is counted: no file may be left whose session is gone
 * or archived, and a live session's parked cache survives a loopd restart.
 */
describe("parked slot files over a session's life", () => {
  let tmp: ReturnType<typeof tempDir>;
  let stack: Stack;
  afterEach(async () => {
    await stack?.stop();
    tmp?.cleanup();
  });

  const slotDir = () => join(tmp.dir, "slots");
  const parkedFiles = () =>
    readdirSync(slotDir())
      .filter((n) => /^boxmaker-.+\.bin$/.test(n))
      .sort();
  const fileOf = (id: string) => `boxmaker-${id}.bin`;

  async function start(maxBytes = 1024 ** 3): Promise<LoopClient> {
    tmp = tempDir("bxpu-");
    stack = await new Stack(tmp.dir, {
      loopd: { parking: { enabled: true } },
      inferproxy: { slot_files: { dir: join(tmp.dir, "slots"), max_bytes: maxBytes } },
    }).start();
    return loopClient(stack.sockets.loopd);
  }

  async function say(c: LoopClient, id: string, text = `${id}: ${"context ".repeat(200)}`) {
    stack.sim.enqueue({ content: "ok" });
    expect(doneOf(await turn(c, id, text)).finishReason).toBe("stop");
  }

  /** The sessions loopd lists (archived included), and which of them are archived. */
  async function sessions(c: LoopClient) {
    const all = (await c.listSessions({ includeArchived: true })).sessions;
    return { live: new Set(all.filter((s) => s.state !== "archived").map((s) => s.id)), all: all.length };
  }

  /** Every parked file belongs to a live session. Returns the sessions that have one. */
  async function expectNoOrphans(c: LoopClient): Promise<string[]> {
    const { live } = await sessions(c);
    const owners = parkedFiles().map((f) => f.replace(/^boxmaker-|\.bin$/g, ""));
    for (const o of owners) expect(live, `a parked file of ${o}, which is not a live session`).toContain(o);
    return owners;
  }

  it("parks, deletes, archives and restarts, and leaves no file that belongs to no session", async () => {
    let c = await start();
    const [a, b, d, e, f] = [
      await newSession(c, "a"),
      await newSession(c, "b"),
      await newSession(c, "d"),
      await newSession(c, "e"),
      await newSession(c, "f"),
    ];
    // Five main sessions take turns on slot 0: each arrival parks the one before.
    for (const id of [a, b, d, e, f]) await say(c, id);
    expect(parkedFiles()).toEqual([a, b, d, e].map(fileOf).sort());
    expect(statSync(join(slotDir(), fileOf(a))).size).toBeGreaterThan(100_000); // a real slot's rate per token

    // Deleting and archiving erase the file at once.
    expect((await c.deleteSession({ id: a })).deleted).toBe(true);
    await c.archiveSession({ id: b });
    expect(parkedFiles()).toEqual([d, e].map(fileOf).sort());
    expect(await expectNoOrphans(c)).toHaveLength(2);
    expect((await sessions(c)).live).not.toContain(b);

    // An archive while inferproxy is down cannot erase; loopd is then killed before it could retry.
    await stack.kill("inferproxy");
    await c.archiveSession({ id: d });
    expect(parkedFiles()).toContain(fileOf(d));
    await stack.startDaemon("inferproxy");
    c.close();
    await stack.kill("loopd");

    // While loopd is down: f's session log is removed by hand (f held the slot; say it was parked just
    // before), and a file of a session that never came back is left from before a crash.
    const stateSessions = join(tmp.dir, "state", "loopd", "sessions");
    writeFileSync(join(slotDir(), fileOf(f)), "parked before the crash");
    unlinkSync(join(stateSessions, `${f}.jsonl`));
    writeFileSync(join(slotDir(), fileOf("s-ghost-00000000")), "left from before a crash");
    // Not Boxmaker's: never touched.
    writeFileSync(join(slotDir(), "operator-notes.txt"), "mine");

    await stack.startDaemon("loopd");
    c = loopClient(stack.sockets.loopd);
    // At start-up loopd reconciles in the background: d (archived), f (gone) and the ghost are erased.
    await waitFor(() => parkedFiles().length === 1, 20_000, "start-up reconciliation of parked files");
    expect(parkedFiles()).toEqual([fileOf(e)]);
    expect(readdirSync(slotDir())).toContain("operator-notes.txt");
    expect(await expectNoOrphans(c)).toEqual([e]);

    // e's parked cache was learnt back from the directory: its next turn restores it and is a full hit.
    const before = stack.sim.requests.length;
    await say(c, e, "e again");
    const restores = stack.sim.requests.slice(before).filter((r) => r.path.includes("action=restore"));
    expect(restores).toHaveLength(1);
    const last = stack.sim.completions.at(-1)!;
    expect(last.timings!.prompt_n).toBeLessThan(12);

    // status counts what is there.
    const st = await stack.cli(["status"]);
    expect(st.stdout).toMatch(/slot files\s+\S+ \S+ of 1\.0 GiB, 1 parked session /);
    expect(st.stdout).toMatch(/sessions\s+\S+ \S+, 3 logs/);
    c.close();
  });

  it("holds the slot-save directory to its cap, the least recently used session re-reading its prompt", async () => {
    // Room for two of these sessions' caches (each ~0.43 MB at the recorded rate), not three.
    const cap = 1_000_000;
    const c = await start(cap);
    const ids = [
      await newSession(c, "p"),
      await newSession(c, "q"),
      await newSession(c, "r"),
      await newSession(c, "s"),
    ];
    for (const id of ids) await say(c, id);
    // p, q, r were parked in that order; the cap keeps the two most recent.
    const total = parkedFiles().reduce((t, n) => t + statSync(join(slotDir(), n)).size, 0);
    expect(total).toBeLessThanOrEqual(cap);
    expect(parkedFiles()).toEqual([ids[1]!, ids[2]!].map(fileOf).sort());
    // p comes back: nothing to restore, so it re-reads its prompt, and the turn works.
    const before = stack.sim.requests.length;
    await say(c, ids[0]!, "p again");
    expect(stack.sim.requests.slice(before).filter((r) => r.path.includes("action=restore"))).toHaveLength(0);
    expect(stack.sim.completions.at(-1)!.timings!.prompt_n).toBeGreaterThan(150);
    expect(parkedFiles().reduce((t, n) => t + statSync(join(slotDir(), n)).size, 0)).toBeLessThanOrEqual(cap);
    await expectNoOrphans(c);
    c.close();
  });
});
