import { join } from "node:path";
import { SessionRole } from "@boxmaker/common";
import { startLlamaSim } from "@boxmaker/llama-sim";
import { describe, expect, it } from "vitest";
import { Stack, waitFor } from "../support/stack.js";
import { doneOf, newSession, turn, type LoopClient } from "../support/loop-client.js";
import { useStack, type StackFixture } from "../support/use-stack.js";
import { tempDir } from "../support/tmp.js";

/*
 * loopd's slot map against the server's slot count (#33). A loopd given no
 * map follows the server: on a one- or two-slot server a scheduled turn and a
 * subagent run (before, the default map put scheduled work on slot 2 and
 * every scheduled turn failed with "slot 2 does not exist"). A map that names
 * a slot the server lacks is refused in one line: at start, loopd exits 2;
 * when a restarted server comes back smaller, that role's turns fail at once
 * and `boxmaker status` says why.
 */

const spawn = (id: string, task: string) => ({
  toolCalls: [{ id, name: "spawn_agent", arguments: JSON.stringify({ task }) }],
});
const slotsSince = (t: StackFixture, from: number) =>
  t.stack.sim.completions.slice(from).map((r) => (r.body as { id_slot: number }).id_slot);

async function scheduledAnswer(client: LoopClient, id: string): Promise<string> {
  let last = "";
  let state = "";
  await waitFor(
    () => {
      void client.getSession({ id }).then((h) => {
        last = h.messages.at(-1)?.messageJson ?? "";
        state = h.session?.state ?? "";
      });
      return last.includes("Nightly check done");
    },
    30_000,
    `the scheduled turn to finish (session state ${state})`,
  );
  return last;
}

describe.each([
  { slots: 1, scheduled: [0, 0, 0], main: [0, 0, 0] },
  { slots: 2, scheduled: [1, 1, 1], main: [0, 1, 0] },
])("a $slots-slot server and a loopd given no slot map", ({ slots, scheduled, main }) => {
  const t = useStack(`bxsm${slots}-`, {
    sim: { totalSlots: slots },
    loopd: { schedules: [{ id: "nightly", cron: "0 0 1 1 *", prompt: "nightly check: delegate the count" }] },
  });

  it("runs a scheduled turn and its subagent on the slots the server has", async () => {
    const from = t.stack.sim.completions.length;
    t.stack.sim.enqueue(spawn("s1", "count the files for the nightly check"));
    t.stack.sim.enqueue({ content: "There are 12 files." });
    t.stack.sim.enqueue({ content: "Nightly check done: the subagent counted 12 files." });
    const started = await t.client.runSchedule({ id: "nightly" });
    await scheduledAnswer(t.client, started.id);
    expect(slotsSince(t, from)).toEqual(scheduled);
  });

  it("runs a main session's subagent on the slots the server has", async () => {
    const from = t.stack.sim.completions.length;
    t.stack.sim.enqueue(spawn("m1", "list the files"));
    t.stack.sim.enqueue({ content: "main.ts and util.ts" });
    t.stack.sim.enqueue({ content: "The subagent found main.ts and util.ts." });
    const id = await newSession(t.client, "main work");
    expect(doneOf(await turn(t.client, id, "delegate a listing")).finishReason).toBe("stop");
    expect(slotsSince(t, from)).toEqual(main);
  });

  it("shows the map it follows in boxmaker status", async () => {
    const st = await t.client.status({});
    expect(Object.fromEntries(st.slots.map((x) => [x.role, x.slot]))).toEqual({
      main: main[0],
      subagent: main[1],
      scheduled: scheduled[0],
    });
    expect(st.slotMapProblem).toBe("");
  });
});

describe("an explicit slot map naming slot 2 on a two-slot server", () => {
  it("stops loopd at start with exit 2 and one line naming the role, the slot and the server's count", async () => {
    const tmp = tempDir("bxsmx-");
    const stack = new Stack(tmp.dir, { sim: { totalSlots: 2 }, loopd: { slots: { scheduled: 2 } } });
    try {
      const err = await stack.start().then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(err?.message).toMatch(/^loopd exited 2: /);
      const stderr = stack.daemons.get("loopd")!.stderr.join("");
      expect(stderr.trim().split("\n")).toEqual([
        "loopd's slots.scheduled is slot 2, but llama-server has 2 slot(s) (slots 0..1): " +
          "set slots.scheduled below 2, or leave it out to follow the server",
      ]);
    } finally {
      await stack.stop();
      tmp.cleanup();
    }
  });
});

describe("an explicit slot map when the server comes back with fewer slots", () => {
  const t = useStack("bxsmr-", {
    sim: { totalSlots: 3 },
    loopd: { slots: { main: 0, subagent: 1, scheduled: 2 }, server_check_ms: 200 },
  });

  it("fails that role's turns at once with the one line, and boxmaker status shows it", async () => {
    await t.stack.sim.close();
    t.stack.sim = await startLlamaSim({
      socketPath: t.stack.sockets.llama,
      slotSavePath: join(t.stack.dir, "slots"),
      totalSlots: 2,
    });
    const line =
      "loopd's slots.scheduled is slot 2, but llama-server has 2 slot(s) (slots 0..1): " +
      "set slots.scheduled below 2, or leave it out to follow the server";
    let problem = "";
    await waitFor(
      () => {
        void t.client.status({}).then((st) => {
          problem = st.slotMapProblem;
        });
        return problem === line;
      },
      15_000,
      "loopd to see the server's two slots",
    );
    const status = await t.stack.cli(["status"]);
    expect(status.stdout).toContain(line);

    const id = await newSession(t.client, "nightly", SessionRole.SCHEDULED);
    const from = t.stack.sim.completions.length;
    const last = (await turn(t.client, id, "nightly check")).at(-1)?.event;
    expect(last?.case).toBe("turnFailed");
    if (last?.case === "turnFailed") expect(last.value.message).toContain(line);
    // Refused before a request: the server never saw it.
    expect(t.stack.sim.completions.length).toBe(from);
  });
});
