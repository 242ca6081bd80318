import { join } from "node:path";
import { mkdirSync } from "node:fs";
import { SessionRole } from "@boxmaker/common";
import { afterAll, describe, expect, it } from "vitest";
import { SimProcess } from "../support/sim-process.js";
import { Up, stopUp } from "../support/up-process.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";
import { tempDir } from "../support/tmp.js";

/*
 * `boxmaker up --accept-server-contract` on a server with fewer slots than the
 * production three (#33): inferproxy takes the server's total_slots and loopd,
 * given no slot map, follows it, so a scheduled session's turn runs instead of
 * failing with "slot 2 does not exist".
 */
describe.each([1, 2])("boxmaker up --accept-server-contract on a %i-slot server", (slots) => {
  const tmp = tempDir(`bxups${slots}-`);
  const ws = join(tmp.dir, "ws");
  mkdirSync(ws, { recursive: true });
  const sim = new SimProcess(join(tmp.dir, "llama.sock"), tmp.dir);
  let up: Up | undefined;
  afterAll(async () => {
    if (up) await stopUp(up);
    await sim.kill();
    tmp.cleanup();
  });

  it("runs a scheduled session's turn on the slot the server's count gives", async () => {
    await sim.start([{ content: "Nightly check done." }], { slots });
    up = new Up(
      [
        "--upstream-socket",
        sim.socketPath,
        "--accept-server-contract",
        "--sandbox",
        "none",
        "--runtime-dir",
        join(tmp.dir, "run"),
        "--state-dir",
        join(tmp.dir, "state"),
        "--workspace",
        ws,
      ],
      tmp.dir,
    );
    await up.ready(40_000);
    const client = loopClient(join(tmp.dir, "run", "loopd.sock"));
    try {
      const id = await newSession(client, "nightly", SessionRole.SCHEDULED);
      expect(doneOf(await turn(client, id, "nightly check")).finishReason).toBe("stop");
      const st = await client.status({});
      expect(st.slots.find((x) => x.role === "scheduled")?.slot).toBe(slots - 1);
      expect(st.slotMapProblem).toBe("");
    } finally {
      client.close();
    }
  }, 60_000);
});
