import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { FlushPacer, InferService, createClient } from "@boxmaker/common";
import { forkReady } from "../../../test/support/processes.js";
import { tempDir } from "../../../test/support/tmp.js";

let child: ChildProcess | undefined;
const tmp = tempDir();
afterEach(() => {
  child?.kill();
  child = undefined;
});
afterAll(() => tmp.cleanup());

describe("a streamed event reaches the client before the producer's next work", () => {
  it("the first event arrives while the server still holds its event loop for the second", async () => {
    const sock = join(tmp.dir, "busy.sock");
    child = await forkReady(join(import.meta.dirname, "support", "busy-stream-server.mjs"), [sock, "400"]);
    const c = createClient(InferService, sock);
    const arrivals: bigint[] = [];
    const texts: string[] = [];
    for await (const ev of c.complete({})) {
      if (ev.event.case !== "content") continue;
      arrivals.push(process.hrtime.bigint());
      texts.push(ev.event.value.text);
    }
    c.close();
    expect(texts.map((t) => t.split(" ")[0])).toEqual(["first", "second"]);
    // The server made the second event when its held work ended: the first was already here.
    const secondMadeAt = BigInt(texts[1]!.split(" ")[1]!);
    expect(arrivals[0]! < secondMadeAt).toBe(true);
  });
});

describe("FlushPacer", () => {
  it("flushes a stream's first write, then at most every FLUSH_EVERY_MS of writes", async () => {
    let t = 1000;
    const p = new FlushPacer(() => t);
    expect(p.due()).toBe(true);
    await p.flush();
    t += FlushPacer.FLUSH_EVERY_MS / 2;
    expect(p.due()).toBe(false);
    t += FlushPacer.FLUSH_EVERY_MS / 2;
    expect(p.due()).toBe(true);
    await p.flush();
    expect(p.due()).toBe(false);
  });
});
