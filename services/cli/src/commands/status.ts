import type { Command } from "commander";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { output } from "../output.js";
import { runningStack, sourceText, type SocketChoice } from "../socket-choice.js";
import type { StackRecord } from "../stack-record.js";
import type { LogsReport } from "../render/log-rows.js";
import { styleFor } from "../render/style.js";
import { widthOf } from "../render/columns.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("status")
    .description("health of each daemon, llama-server build and self-test, slots and who holds them")
    .option("--json", "print the Status response as one JSON object")
    .addHelpText(
      "after",
      `
Exit 0 when everything is up and the self-test passed, 6 when a daemon is
unreachable or llama-server is not serving, 1 when the self-test failed.

Examples:
  boxmaker status
  boxmaker status --json | jq '.infer.self_test.passed'`,
    )
    .action(async (opts: { json?: boolean }) => {
      // Loaded while loopd asks the other daemons, which the CLI would otherwise wait through idle.
      const renderer = import("../render/status.js");
      const g = globals();
      const st = await withClient(g, (client) => client.status({}));
      const choice = await g.socket();
      const logs = await logsReport(choice, g.stackRecord);
      const stack = { ...stackJson(choice), ...(logs?.kind === "up" ? { logs: logsJson(logs) } : {}) };
      const { healthy, renderStatus } = await renderer;
      await output(opts, {
        json: async (jsonOf) => ({
          value: {
            stack,
            ...JSON.parse(jsonOf((await import("@boxmaker/common/client")).LoopStatusResponseSchema, st)),
          },
        }),
        text: () =>
          `stack: ${stack.socket} (${stack.from})\n${renderStatus(st, styleFor(process.stdout), widthOf(process.stdout), logs)}`,
      });
      const up = st.daemons.every((d) => d.reachable) && st.infer?.serverState === "ok";
      process.exitCode = healthy(st) ? ExitCode.ok : up ? ExitCode.failed : ExitCode.unavailable;
    });
}

/** Which stack `status` asked, and why that one: its --json "stack" object (snake_case, as the rest). */
function stackJson({ path, source }: SocketChoice) {
  return {
    socket: path,
    from: sourceText(source),
    source: source.kind,
    ...(source.kind === "config" ? { config_file: source.file } : {}),
    ...(source.kind === "up"
      ? { up_pid: source.stack.pid, runtime_dir: source.stack.runtimeDir, state_dir: source.stack.stateDir }
      : {}),
  };
}

/**
 * The logs of the stack asked: a stack `up` runs (found through its record, or
 * the record's socket given by --socket or BOXMAKER_SOCKET) has its log files
 * and their limits; any other stack's daemons log where their service manager
 * puts it, the journal under the systemd units.
 */
async function logsReport(choice: SocketChoice, record: string | undefined): Promise<LogsReport | undefined> {
  let up: StackRecord | undefined;
  if (choice.source.kind === "up") up = choice.source.stack;
  else if (record && choice.source.kind !== "own") {
    const running = await runningStack(record);
    if (running?.loopdSocket === choice.path) up = running;
  }
  if (!up) return { kind: "journal" };
  // An `up` from before log rotation recorded no logs: nothing is known to show.
  if (!up.logs) return undefined;
  const { logFileSizes } = await import("../log-files.js");
  return { kind: "up", logs: up.logs, sizes: logFileSizes(up.logs) };
}

/** The logs in --json: snake_case, as the rest. */
function logsJson(r: Extract<LogsReport, { kind: "up" }>) {
  return {
    dir: r.logs.dir,
    max_bytes: r.logs.maxBytes,
    keep_files: r.logs.keep,
    compress: r.logs.compress,
    files: r.sizes.map((f) => ({ name: f.name, bytes: f.bytes, older_files: f.older, older_bytes: f.olderBytes })),
  };
}
