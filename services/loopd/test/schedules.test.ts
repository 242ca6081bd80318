import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Schedules, runsBetween, validateCron, type ScheduleState } from "../src/schedules.js";
import { silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
beforeEach(() => (tmp = tempDir()));
afterEach(() => {
  vi.useRealTimers();
  tmp.cleanup();
});

const T0 = Date.parse("2026-11-29T10:00:00Z");

describe("schedules", () => {
  it("takes five-field cron expressions, or six with seconds first, and nothing else", () => {
    expect(() => validateCron("30 6 * * *")).not.toThrow();
    expect(() => validateCron("* * * *")).toThrow(/has 4 fields; a schedule needs five/);
    expect(() => validateCron("0 30 6 * * *")).not.toThrow();
    expect(() => validateCron("0 0 30 6 * * *")).toThrow(/has 7 fields/);
    expect(() => validateCron("61 * * * *")).toThrow(/not a cron expression/);
  });

  it("has no run time before its first run, then the time it started", async () => {
    vi.useFakeTimers({ now: T0 });
    const s = new Schedules(tmp.dir, [], async () => undefined, silentLog);
    s.begin();
    const added = s.add("*/5 * * * *", "tick");
    expect(added.ranMs).toBeUndefined();
    await vi.advanceTimersByTimeAsync(5 * 60_000 + 10);
    expect(s.list()[0]!.ranMs).toBeGreaterThanOrEqual(T0 + 5 * 60_000);
    s.stop();
  });

  it("counts every run between two instants", () => {
    expect(runsBetween("*/15 * * * *", T0, T0 + 60 * 60_000)).toHaveLength(4);
    expect(runsBetween("0 3 * * *", T0, T0 + 60 * 60_000)).toHaveLength(0);
  });

  it("reports runs missed while loopd was down instead of skipping them silently", () => {
    let now = T0;
    const cfg = [{ id: "hourly", cron: "0 * * * *", prompt: "check" }];
    const first = new Schedules(
      tmp.dir,
      cfg,
      async () => undefined,
      silentLog,
      () => now,
    );
    expect(first.begin()).toEqual([]);
    first.stop();
    now = T0 + 5 * 60 * 60_000 + 1; // down for five hours
    const second = new Schedules(
      tmp.dir,
      cfg,
      async () => undefined,
      silentLog,
      () => now,
    );
    expect(second.begin()).toEqual([{ id: "hourly", missed: 5 }]);
    expect(second.list()[0]!.missedRuns).toBe(5);
    second.stop();
  });

  it("skips and counts a run while the schedule's previous run is still going", async () => {
    vi.useFakeTimers({ now: T0 });
    let finish!: () => void;
    let starts = 0;
    const s = new Schedules(
      tmp.dir,
      [{ id: "m", cron: "* * * * *", prompt: "p" }],
      async () => {
        starts++;
        await new Promise<void>((r) => (finish = r));
      },
      silentLog,
    );
    s.begin();
    await vi.advanceTimersByTimeAsync(60_000 + 10);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(starts).toBe(1);
    expect(s.list()[0]!.missedRuns).toBe(1);
    finish();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(starts).toBe(2);
    s.stop();
  });

  it("starts a session when a run is due, and API schedules survive a restart", async () => {
    vi.useFakeTimers({ now: T0 });
    const started: ScheduleState[] = [];
    const s = new Schedules(tmp.dir, [], async (x) => void started.push(x), silentLog);
    s.begin();
    const added = s.add("*/5 * * * *", "tick");
    await vi.advanceTimersByTimeAsync(5 * 60_000 + 10);
    expect(started.map((x) => x.prompt)).toEqual(["tick"]);
    s.stop();
    const again = new Schedules(tmp.dir, [], async () => undefined, silentLog);
    expect(again.list().map((x) => x.id)).toEqual([added.id]);
    expect(() => again.add("bogus", "x")).toThrow(/cron/);
  });
});
