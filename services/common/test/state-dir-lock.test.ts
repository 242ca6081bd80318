import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HOLDER_FILE, readHolder } from "@boxmaker/common";
import { tempDir } from "../../../test/support/tmp.js";

/**
 * The state directory lock with real processes: what one holds another is
 * refused, and the kernel gives it back when the holder dies, however.
 */
const script = join(import.meta.dirname, "support", "lock-holder.mjs");
type Reply = { held?: number; refused?: string; code?: string; holderPid?: number; released?: boolean };

const children: ChildProcess[] = [];
let tmp: ReturnType<typeof tempDir> | undefined;
afterEach(async () => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill("SIGKILL");
      await once(c, "exit");
    }
  }
  tmp?.cleanup();
});

/** A holder process and its first reply (held or refused). */
async function contender(dir: string, socket: string, at = 0): Promise<{ child: ChildProcess; reply: Reply }> {
  const child = fork(script, [dir, socket, String(at)]);
  children.push(child);
  const first = await Promise.race([
    once(child, "message").then(([m]) => m as Reply),
    once(child, "exit").then(([code]) => ({ refused: `exited ${code} without a word` }) as Reply),
  ]);
  return { child, reply: first };
}

async function sigkill(child: ChildProcess): Promise<void> {
  const exited = once(child, "exit");
  child.kill("SIGKILL");
  await exited;
}

describe("lockStateDir", () => {
  it("refuses a second holder in one line naming the first one's pid and socket", async () => {
    tmp = tempDir("bxlk-");
    const dir = join(tmp.dir, "state");
    const first = await contender(dir, "/run/a/loopd.sock");
    expect(first.reply.held).toBe(first.child.pid);
    expect(readHolder(dir)).toMatchObject({ daemon: "lock-holder", pid: first.child.pid, socket: "/run/a/loopd.sock" });

    const second = await contender(dir, "/run/b/loopd.sock");
    expect(second.reply.code).toBe("STATE_DIR_IN_USE");
    expect(second.reply.holderPid).toBe(first.child.pid);
    expect(second.reply.refused).toMatch(
      new RegExp(
        `^${dir} is in use by lock-holder pid ${first.child.pid} \\(socket /run/a/loopd\\.sock, since \\d{4}-\\d\\d-\\d\\dT[^)]+\\): stop that one, or give this one another state_dir$`,
      ),
    );
    // Refused, it left the holder's record alone.
    expect(readHolder(dir)?.pid).toBe(first.child.pid);
  });

  it("a SIGKILLed holder's lock is free at once: the next holder's first try gets it", async () => {
    tmp = tempDir("bxlk-");
    const dir = join(tmp.dir, "state");
    for (let round = 0; round < 3; round++) {
      const holder = await contender(dir, `/run/${round}.sock`);
      expect(holder.reply.held, `round ${round}: ${holder.reply.refused}`).toBe(holder.child.pid);
      await sigkill(holder.child);
      // Its record is left behind, naming a dead pid: nothing anyone must remove.
      expect(readHolder(dir)?.pid).toBe(holder.child.pid);
    }
    // lockStateDir tries once: a lock the kernel had not dropped would be a refusal here, not a wait.
    const next = await contender(dir, "/run/next.sock");
    expect(next.reply.held, next.reply.refused).toBe(next.child.pid);
    expect(readHolder(dir)).toMatchObject({ pid: next.child.pid, socket: "/run/next.sock" });
  });

  it("release lets the next one in and removes the record", async () => {
    tmp = tempDir("bxlk-");
    const dir = join(tmp.dir, "state");
    const first = await contender(dir, "/run/a.sock");
    expect(first.reply.held).toBeDefined();
    first.child.send("release");
    const [m] = (await once(first.child, "message")) as [Reply];
    expect(m.released).toBe(true);
    expect(existsSync(join(dir, HOLDER_FILE))).toBe(false);
    // The holder is still alive: it is the release, not its death, that freed the lock.
    const second = await contender(dir, "/run/b.sock");
    expect(second.reply.held).toBe(second.child.pid);
  });

  it("of holders asking at the same instant exactly one gets the lock", async () => {
    tmp = tempDir("bxlk-");
    for (let round = 0; round < 3; round++) {
      const dir = join(tmp.dir, `state${round}`);
      // Ahead enough for four processes to start on a loaded machine (a late one is refused all the same).
      const at = Date.now() + 1_500;
      const all = await Promise.all([0, 1, 2, 3].map((i) => contender(dir, `/run/${i}.sock`, at)));
      const held = all.filter((c) => c.reply.held);
      expect(held.length, `round ${round}: ${all.map((c) => JSON.stringify(c.reply)).join(" ")}`).toBe(1);
      for (const c of all.filter((x) => !x.reply.held)) expect(c.reply.holderPid).toBe(held[0]!.child.pid);
      for (const c of all) if (c.child.exitCode === null) await sigkill(c.child);
    }
  }, 60_000);
});
