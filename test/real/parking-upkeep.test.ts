import { afterEach, describe, expect, it } from "vitest";
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { RealLlama, haveRealLlama, startStackOn } from "./support/real-llama.js";
import type { Stack } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { doneOf, loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";

/**
 * The simulator's slot files stand in for the real server's; here the real
 * llama-server writes them. Its files are erased when their session is
 * deleted, capped by size, and a parked cache learnt back after a loopd
 * restart is one the real server restores and reuses.
 */
describe.skipIf(!haveRealLlama("parked slot file upkeep against the real llama-server"))(
  "real llama-server: parked slot files",
  () => {
    let tmp: ReturnType<typeof tempDir> | undefined;
    let llama: RealLlama | undefined;
    let stack: Stack | undefined;
    afterEach(async () => {
      await stack?.stop();
      await llama?.close();
      tmp?.cleanup();
    });

    it("erases a deleted session's file, holds the cap, and restores a learnt-back cache after a loopd restart", async () => {
      tmp = tempDir("bxr-pu-");
      const slots = join(tmp.dir, "slots");
      llama = await new RealLlama({
        model: "answer",
        socketPath: join(tmp.dir, "llama.sock"),
        ctxSize: 3 * 8192,
        slotSavePath: slots,
      }).start();
      const run = async (cap: number) =>
        startStackOn(llama!, join(tmp!.dir, "stack"), {
          loopd: { parking: { enabled: true } },
          inferproxy: { slot_files: { dir: slots, max_bytes: cap } },
        });
      stack = await run(1024 ** 3);
      let c: LoopClient = loopClient(stack.sockets.loopd);
      const files = () => readdirSync(slots).filter((n) => n.startsWith("boxmaker-"));
      const say = async (id: string, text: string) => doneOf(await turn(c, id, text));

      const [a, b, x] = [await newSession(c, "a"), await newSession(c, "b"), await newSession(c, "x")];
      const first = new Map<string, { cacheN: number; promptN: number }>();
      for (const id of [a, b, x]) {
        const t = (await say(id, `${id}: ${"context ".repeat(300)}`)).timings!;
        first.set(id, { cacheN: t.cacheN, promptN: t.promptN });
      }
      expect(files().sort()).toEqual([`boxmaker-${a}.bin`, `boxmaker-${b}.bin`].sort());
      const size = statSync(join(slots, `boxmaker-${a}.bin`)).size;
      expect(size).toBeGreaterThan(10_000);

      expect((await c.deleteSession({ id: a })).deleted).toBe(true);
      expect(files()).toEqual([`boxmaker-${b}.bin`]);

      // loopd restarts: b's file is learnt back, and the real server restores it for b's next turn.
      c.close();
      await stack.kill("loopd");
      await stack.startDaemon("loopd");
      c = loopClient(stack.sockets.loopd);
      // A killed loopd leaves its socket file: wait for the new one to answer.
      await c.listSessions({}, { waitForReady: true, timeoutMs: 30_000 });
      const again = (await say(b, "b again")).timings!;
      const bFirst = first.get(b)!;
      expect(again.cacheN).toBeGreaterThanOrEqual(bFirst.cacheN + bFirst.promptN);
      expect(again.promptN).toBeLessThan(100);
      c.close();

      // A cap below one file: each save is erased at once, and turns go on (re-reading).
      await stack.stop();
      stack = await run(Math.floor(size / 2));
      c = loopClient(stack.sockets.loopd);
      await say(x, "x again");
      await say(b, "b once more");
      for (const f of files()) expect(statSync(join(slots, f)).size).toBeLessThanOrEqual(Math.floor(size / 2));
      expect(files()).toEqual([]);
      c.close();
    }, 300_000);
  },
);
