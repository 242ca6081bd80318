import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { atomicWrite, invalidArgument, messageOf, notFound, type Logger } from "@boxmaker/common";
import type { ScheduleConfig } from "./config.js";

// cron-parser brings luxon: megabytes of an idle loopd's heap (docs/benchmarks.md, "Figures behind the code") for stacks that have no
// schedule at all. It is loaded with the first cron expression read instead.
const load = createRequire(import.meta.url);
let parser: typeof import("cron-parser").CronExpressionParser | undefined;
const cronParser = () => (parser ??= (load("cron-parser") as typeof import("cron-parser")).CronExpressionParser);

export interface ScheduleState extends ScheduleConfig {
  /** Where it came from: config entries cannot be removed through the API. */
  source: "config" | "api";
  /** The clock cursor runs are counted from (creation time before a first run). */
  lastRunMs: number;
  /** When it last actually started a run; absent before its first run. */
  ranMs?: number;
  missedRuns: number;
}

/** Runs of `cron` strictly after `fromMs` and at or before `toMs` (capped, it is a report not a replay). */
export function runsBetween(cron: string, fromMs: number, toMs: number, cap = 1000): number[] {
  const it = cronParser().parse(cron, { currentDate: new Date(fromMs) });
  const out: number[] = [];
  for (;;) {
    const t = it.next().getTime();
    if (t > toMs || out.length >= cap) return out;
    out.push(t);
  }
}

export function nextRun(cron: string, afterMs: number): number {
  return cronParser()
    .parse(cron, { currentDate: new Date(afterMs) })
    .next()
    .getTime();
}

export function validateCron(cron: string): void {
  // The classic five fields, or six with a leading seconds field (what tests and
  // sub-minute jobs use). cron-parser would also take four, silently reading them
  // as something the person did not mean.
  const fields = cron.trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5 && fields.length !== 6) {
    throw invalidArgument(
      `not a cron expression: "${cron}" has ${fields.length} field${fields.length === 1 ? "" : "s"}; a schedule needs five (minute hour day-of-month month day-of-week, e.g. "30 6 * * *"), or six with seconds first`,
    );
  }
  try {
    cronParser().parse(cron);
  } catch (err) {
    throw invalidArgument(`not a cron expression: "${cron}" (${messageOf(err)})`);
  }
}

/**
 * Cron schedules that start sessions on the scheduled slot. State (last run)
 * is kept on disk so runs missed while loopd was down are counted and
 * reported at start, never silently skipped; they are not replayed in a burst.
 */
export class Schedules {
  private readonly items = new Map<string, ScheduleState>();
  /** Schedules whose previous run is still going: a new run waits for none, it is skipped and counted. */
  private readonly running = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly file: string;

  constructor(
    stateDir: string,
    configured: ScheduleConfig[],
    /** Starts a run; resolves when the run has finished. */
    private readonly start: (s: ScheduleState) => Promise<void>,
    private readonly log: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.file = join(stateDir, "schedules.json");
    const saved = existsSync(this.file) ? (JSON.parse(readFileSync(this.file, "utf8")) as ScheduleState[]) : [];
    const byId = new Map(saved.map((s) => [s.id, s]));
    for (const c of configured) {
      validateCron(c.cron);
      const prev = byId.get(c.id);
      this.items.set(c.id, {
        ...c,
        source: "config",
        lastRunMs: prev?.lastRunMs ?? this.now(),
        missedRuns: prev?.missedRuns ?? 0,
      });
    }
    for (const s of saved) if (s.source === "api" && !this.items.has(s.id)) this.items.set(s.id, s);
  }

  /** Counts runs missed while loopd was down, then starts the clock. */
  begin(): { id: string; missed: number }[] {
    const now = this.now();
    const report: { id: string; missed: number }[] = [];
    for (const s of this.items.values()) {
      const missed = runsBetween(s.cron, s.lastRunMs, now).length;
      if (missed) {
        s.missedRuns += missed;
        s.lastRunMs = now;
        report.push({ id: s.id, missed });
        this.log.warn({ schedule: s.id, missed, cron: s.cron }, "scheduled runs were missed while loopd was down");
      }
    }
    this.persist();
    this.arm();
    return report;
  }

  list(): ScheduleState[] {
    return [...this.items.values()];
  }

  add(cron: string, prompt: string): ScheduleState {
    validateCron(cron);
    if (!prompt.trim()) throw invalidArgument("a schedule needs a prompt");
    const s: ScheduleState = {
      id: `sch-${randomBytes(3).toString("hex")}`,
      cron,
      prompt,
      source: "api",
      lastRunMs: this.now(),
      missedRuns: 0,
    };
    this.items.set(s.id, s);
    this.persist();
    this.arm();
    return s;
  }

  /** The schedule with this id; NOT_FOUND names how to list them. */
  get(id: string): ScheduleState {
    const s = this.items.get(id);
    if (!s) throw notFound(`no schedule ${id}; \`boxmaker schedule ls\` lists them`);
    return s;
  }

  /** Records a run started by hand (`schedule run`): it shows as the last run; the cron clock is unchanged. */
  markRan(id: string): void {
    this.get(id).ranMs = this.now();
    this.persist();
  }

  remove(id: string): boolean {
    const s = this.items.get(id);
    if (!s) return false;
    if (s.source === "config") throw invalidArgument(`schedule ${id} comes from the config file; remove it there`);
    this.items.delete(id);
    this.persist();
    this.arm();
    return true;
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    const now = this.now();
    let soonest = Infinity;
    for (const s of this.items.values()) soonest = Math.min(soonest, nextRun(s.cron, Math.max(s.lastRunMs, now - 1)));
    if (!Number.isFinite(soonest)) return;
    // Re-armed after every fire; capped so a clock change is noticed within a minute.
    this.timer = setTimeout(() => this.fire(), Math.min(Math.max(0, soonest - now), 60_000));
    this.timer.unref();
  }

  private fire(): void {
    const now = this.now();
    for (const s of this.items.values()) {
      if (runsBetween(s.cron, s.lastRunMs, now, 2).length === 0) continue;
      s.lastRunMs = now;
      if (this.running.has(s.id)) {
        s.missedRuns++;
        this.log.warn({ schedule: s.id }, "scheduled run skipped: the previous run is still going");
        continue;
      }
      s.ranMs = now;
      this.running.add(s.id);
      this.start(s)
        .catch((err: unknown) => this.log.error({ schedule: s.id, err: messageOf(err) }, "scheduled run failed"))
        .finally(() => this.running.delete(s.id));
    }
    this.persist();
    this.arm();
  }

  private persist(): void {
    atomicWrite(this.file, JSON.stringify([...this.items.values()], null, 2));
  }
}
