import { Argument, type Command } from "commander";
import { completesTo } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { readPrompt } from "../prompt-input.js";
import { output, proto } from "../output.js";
import { printErr } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";
import { table, truncate } from "../render/text.js";

const scheduleArgument = () =>
  completesTo(new Argument("<id>", "schedule id (see `boxmaker schedule ls`)"), { ids: "schedules" });

export function register(program: Command, globals: () => GlobalOptions): void {
  const schedule = program
    .command("schedule")
    .description("prompts loopd runs on a cron schedule, each in a new session")
    .addHelpText(
      "after",
      `
Examples:
  boxmaker schedule add "0 7 * * 1-5" "summarise yesterday's commits in ~/src/app"
  boxmaker schedule ls
  boxmaker schedule run sch-1a2b3c
  boxmaker schedule rm sch-1a2b3c`,
    );

  schedule
    .command("add")
    .description("add a schedule")
    .argument("<cron>", 'five-field cron expression, quoted, e.g. "30 6 * * *"')
    .argument("<prompt...>", "what to run; `-` reads it from stdin")
    .option("--json", "print the new schedule as JSON")
    .action(async (cron: string, words: string[], opts: { json?: boolean }) => {
      const prompt = await readPrompt(words);
      const sch = await withClient(globals(), (client) => client.addSchedule({ cron, prompt }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).ScheduleSchema, sch),
        text: () => `added schedule ${sch.id}; next run ${when(sch.nextRunUnixMs)}\n`,
      });
    });

  schedule
    .command("ls")
    .description("list schedules with their last and next run")
    .option("--json", "print the ListSchedules response as JSON")
    .action(async (opts: { json?: boolean }) => {
      const res = await withClient(globals(), (client) => client.listSchedules({}));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).ListSchedulesResponseSchema, res),
        text: async () => {
          if (!res.schedules.length) {
            printErr("no schedules; add one with `boxmaker schedule add CRON PROMPT`\n");
            return;
          }
          const s = styleFor(process.stdout);
          const rows = [
            ["ID", "CRON", "LAST RUN", "NEXT RUN", "MISSED", "PROMPT"].map((h) => s.bold(h)),
            ...res.schedules.map((x) => [
              x.id,
              x.cron,
              x.lastRunUnixMs ? when(x.lastRunUnixMs) : s.dim("never"),
              when(x.nextRunUnixMs),
              x.missedRuns ? s.yellow(String(x.missedRuns)) : "0",
              truncate(x.prompt, 60),
            ]),
          ];
          const { widthOf } = await import("../render/columns.js");
          return `${table(rows, { width: widthOf(process.stdout), drop: [4, 2], cutFlex: true })}\n`;
        },
      });
    });

  schedule
    .command("run")
    .description("run a schedule once now, in a new session (its cron times are unchanged)")
    .addArgument(scheduleArgument())
    .option("--json", "print the new session as JSON")
    .action(async (id: string, opts: { json?: boolean }) => {
      const s = await withClient(globals(), (client) => client.runSchedule({ id }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).SessionInfoSchema, s),
        text: () => `started session ${s.id}; \`boxmaker attach ${s.id}\` to watch it\n`,
      });
    });

  schedule
    .command("rm")
    .description("remove a schedule")
    .addArgument(scheduleArgument())
    .option("--json", "print the RemoveSchedule response as JSON")
    .action(async (id: string, opts: { json?: boolean }) => {
      const res = await withClient(globals(), (client) => client.removeSchedule({ id }));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).RemoveScheduleResponseSchema, res),
        text: () => {
          if (res.removed) return `removed schedule ${id}\n`;
          printErr(`no schedule ${id}; \`boxmaker schedule ls\` lists them\n`);
          return undefined;
        },
      });
      if (!res.removed) process.exitCode = 1;
    });
}

/** Local time to the minute: cron runs in the daemon's local time. */
function when(unixMs: bigint): string {
  if (!unixMs) return "-";
  const d = new Date(Number(unixMs));
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
