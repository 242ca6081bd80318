import { describe, expect, it } from "vitest";
import { SessionRole } from "@boxmaker/common";
import { useStack } from "../support/use-stack.js";
import { waitFor } from "../support/stack.js";

/** A schedule from the config file starts sessions on the scheduled slot while loopd runs. */
describe("scheduled sessions through loopd", () => {
  // Six fields: cron-parser's seconds, so the test needs no minute-long wait.
  const t = useStack("bxr-", {
    loopd: { schedules: [{ id: "tick", cron: "*/2 * * * * *", prompt: "scheduled check" }] },
  });

  it("runs the schedule's prompt in a new session on the scheduled slot", async () => {
    let scheduled: string | undefined;
    await waitFor(
      () => t.stack.sim.completions.some((r) => r.rawBody.includes("scheduled check")),
      10_000,
      "a scheduled run",
    );
    await waitFor(
      () => {
        void t.client.listSessions({}).then((r) => {
          scheduled = r.sessions.find(
            (s) => s.role === SessionRole.SCHEDULED && s.state === "idle" && s.messages >= 2,
          )?.id;
        });
        return scheduled !== undefined;
      },
      10_000,
      "the scheduled session to finish",
    );
    const req = t.stack.sim.completions.find((r) => r.rawBody.includes("scheduled check"))!;
    expect((req.body as { id_slot: number }).id_slot).toBe(2);
    const h = await t.client.getSession({ id: scheduled! });
    expect(h.session!.title).toBe("schedule tick");
    const roles = h.messages.map((m) => (JSON.parse(m.messageJson) as { role: string }).role);
    expect(roles).toEqual(["user", "assistant"]);
    const list = await t.client.listSchedules({});
    expect(list.schedules.find((s) => s.id === "tick")!.lastRunUnixMs).toBeGreaterThan(0n);
  });
});
