import { afterAll, describe, expect, it } from "vitest";
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { InferService, createClient } from "@boxmaker/common";
import { forkReady } from "../../../test/support/processes.js";
import { tempDir } from "../../../test/support/tmp.js";

const tmp = tempDir("bxcf-");
let child: ChildProcess | undefined;
afterAll(() => {
  child?.kill();
  tmp.cleanup();
});

// Complete's writer pulls events from the completion, so while it gives the event loop a
// turn to send what it wrote, the completion waits. The channel's completions push into
// one shared writer; they must wait for it the same way, or the first token sits in
// inferproxy while the rest of the burst is parsed.
describe("an event on CompleteChannel reaches loopd before its completion's next work", () => {
  it("the first event arrives while the completion still holds the event loop for the second", async () => {
    const sock = join(tmp.dir, "busy.sock");
    child = await forkReady(join(import.meta.dirname, "support", "busy-channel-server.mjs"), [sock, "400"]);
    const c = createClient(InferService, sock);
    const call = c.completeChannel();
    call.send({ callId: 1n, kind: { case: "start", value: {} } });
    const arrivals: bigint[] = [];
    const texts: string[] = [];
    for await (const ev of call) {
      if (ev.kind.case === "end") break;
      if (ev.kind.case !== "event" || ev.kind.value.event.case !== "content") continue;
      arrivals.push(process.hrtime.bigint());
      texts.push(ev.kind.value.event.value.text);
    }
    c.close();
    expect(texts.map((t) => t.split(" ")[0])).toEqual(["first", "second"]);
    const secondMadeAt = BigInt(texts[1]!.split(" ")[1]!);
    expect(arrivals[0]! < secondMadeAt).toBe(true);
  });
});
