import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { doneOf, loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";

/** A small tmpfs for loopd's state; needs root (CI and the dev machines run as root). */
function smallDisk(dir: string): boolean {
  mkdirSync(dir, { recursive: true });
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=512k", "tmpfs", dir], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Fills the file system holding `dir` to the last byte. */
function fill(path: string): void {
  const fd = openSync(path, "w");
  const block = Buffer.alloc(4096, 120);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
    // Top up the last partial block byte by byte.
    try {
      for (;;) writeSync(fd, block, 0, 1);
    } catch {
      /* full */
    }
  } finally {
    closeSync(fd);
  }
}

const tmp = tempDir("bxq-");
const disk = join(tmp.dir, "disk");
const mounted = smallDisk(disk);

describe.skipIf(!mounted)("a full disk under loopd's session logs", () => {
  let stack: Stack;
  let client: LoopClient;
  beforeAll(async () => {
    stack = await new Stack(tmp.dir, { loopd: { state_dir: join(disk, "loopd") } }).start();
    client = loopClient(stack.sockets.loopd);
  });
  afterAll(async () => {
    client?.close();
    await stack?.stop();
    execFileSync("umount", [disk]);
    tmp.cleanup();
  });

  it("fails the turn with a clear error, loses nothing, and works again once there is space", async () => {
    const id = await newSession(client, "disk");
    stack.sim.enqueue({ content: "before" });
    expect(doneOf(await turn(client, id, "one")).finalText).toBe("before");

    const filler = join(disk, "filler");
    fill(filler);
    stack.sim.enqueue({ content: "never stored" });
    // Larger than the slack left in the log file's last page, so the write really needs the disk.
    const failed = (await turn(client, id, `two ${"x".repeat(9000)}`)).at(-1)!;
    expect(failed.event.case).toBe("turnFailed");
    if (failed.event.case !== "turnFailed") return;
    expect(failed.event.value.code).toBe("RESOURCE_EXHAUSTED");
    expect(failed.event.value.message).toMatch(/disk is full/);

    rmSync(filler);
    stack.sim.reset();
    stack.sim.enqueue({ content: "after" });
    expect(doneOf(await turn(client, id, "three")).finalText).toBe("after");

    // Restarted, loopd loads the session intact: every record that was written is whole.
    await stack.kill("loopd", "SIGTERM");
    await stack.startDaemon("loopd");
    const again = loopClient(stack.sockets.loopd);
    const h = await again.getSession({ id });
    again.close();
    const texts = h.messages.map((m) => JSON.parse(m.messageJson) as { role: string; content: string });
    expect(texts.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["one", "three"]);
    expect(texts.filter((m) => m.role === "assistant").map((m) => m.content)).toEqual(["before", "after"]);
  });
});
