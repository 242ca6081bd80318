import type { Command } from "commander";
import { sandboxOption } from "../completion/value-kinds.js";
import type { GlobalOptions } from "../global-options.js";
import { UsageError } from "../errors.js";
import { ExitCode } from "../exit-codes.js";
import type { UpFlags } from "../supervisor/up-options.js";
import { printOut, printErr } from "../render/terminal-safe.js";
import { DEFAULT_LOG_ROTATION } from "../log-rotation-plan.js";
import { formatBytes } from "../render/disk.js";

const collect = (v: string, prev: string[] = []) => [...prev, v];

export function register(program: Command, _globals: () => GlobalOptions): void {
  program
    .command("up")
    .description("run the whole stack in the foreground, for machines without systemd (Ctrl-C stops it)")
    .option("--llama-server <bin>", "start this llama-server binary (with --model)")
    .option("--model <path>", "the GGUF model for --llama-server")
    .option("--llama-arg <arg>", "an extra llama-server argument (repeatable)", collect)
    .option("--llama-sim", "use the built llama.cpp simulator (evaluation, CI)")
    .option("--upstream-socket <path>", "use a llama-server already listening on this Unix socket")
    .option("--upstream-url <url>", "use a llama-server already listening on this URL")
    .option(
      "--accept-server-contract",
      "take template hash, n_ctx and slots from the server instead of the production contract",
    )
    .option(
      "--runtime-dir <dir>",
      "sockets and generated configs (default: $XDG_RUNTIME_DIR/boxmaker, else a per-user temp dir)",
    )
    .option(
      "--state-dir <dir>",
      "logs, session logs, blobs, slot saves (default: $XDG_STATE_HOME/boxmaker or ~/.local/state/boxmaker)",
    )
    .option("--workspace <dir>", "a directory tools may work in (repeatable; default: the current directory)", collect)
    .addOption(sandboxOption("bwrap | none (none runs tools unsandboxed)").default("bwrap"))
    .option(
      "--overrides <file>",
      "JSON {inferproxy, brokerd, loopd} merged over the generated configs (policy, MCP servers, budgets)",
    )
    .option("--log-level <level>", "the daemons' log level", "info")
    .option("--max-restarts <n>", "restarts of one process within 5 minutes before giving up", "5")
    .option(
      "--ready-timeout <seconds>",
      "seconds the model server may take to load (inferproxy waits on it too)",
      "900",
    )
    // No commander defaults: planUp's DEFAULT_LOG_ROTATION is the one place they are set.
    .option(
      "--log-max-size <size>",
      `rotate a process's log in <state-dir>/logs past this size, e.g. 64K, 16M (default ${formatBytes(DEFAULT_LOG_ROTATION.maxBytes)})`,
    )
    .option("--log-keep <n>", `older log files kept per process, .1 the newest (default ${DEFAULT_LOG_ROTATION.keep})`)
    .option("--no-log-compress", "leave the older log files plain (default: .2 on are gzip-compressed)")
    .addHelpText(
      "after",
      `
Examples:
  boxmaker up --llama-sim --sandbox none
  boxmaker up --llama-server ~/llama.cpp/build/bin/llama-server --model ~/models/ornith-35b-a3b-Q4_K_M.gguf
  boxmaker up --upstream-socket /run/boxmaker/llama.sock --workspace ~/src/project

Prints the sockets, logs and state directories, and the BOXMAKER_SOCKET line
for other shells; restarts a daemon that dies; Ctrl-C or SIGTERM stops all.`,
    )
    .action(async (flags: UpFlags & { overrides?: string }) => {
      // Loaded here, not at the top: other commands must not pay for the supervisor.
      const { homedir, tmpdir } = await import("node:os");
      const { readFileSync } = await import("node:fs");
      const { planUp } = await import("../supervisor/up-options.js");
      const { checkOverrides } = await import("../supervisor/configs.js");
      const { Supervisor } = await import("../supervisor/supervisor.js");
      const { ProgressLine } = await import("../supervisor/progress-line.js");
      const { removeStackRecord, stackRecordPath, writeStackRecord } = await import("../stack-record.js");

      const uid = process.getuid?.() ?? 0;
      const record = stackRecordPath(process.env, tmpdir(), uid);
      let plan: ReturnType<typeof planUp>;
      let overrides: ReturnType<typeof checkOverrides> | undefined;
      try {
        plan = planUp(flags, {
          env: process.env,
          cwd: process.cwd(),
          home: homedir(),
          tmp: tmpdir(),
          uid,
        });
        if (flags.overrides) overrides = checkOverrides(JSON.parse(readFileSync(flags.overrides, "utf8")));
      } catch (err) {
        if (err instanceof SyntaxError) throw new UsageError(`--overrides: ${err.message}`, { cause: err });
        throw err;
      }

      const sup = new Supervisor({
        ...plan,
        settings: { ...plan.settings, overrides },
        stopGraceMs: 10_000,
        nodePath: process.execPath,
        out: (l) => printOut(`${l}\n`),
        err: (l) => printErr(`${l}\n`),
        progress: new ProgressLine(process.stderr),
        // So a new shell's `boxmaker` finds this stack without BOXMAKER_SOCKET.
        onReady: () => {
          const { loopd } = plan.layout.sockets;
          const { runtimeDir, stateDir, logDir } = plan.layout;
          const logs = { dir: logDir, names: sup.logNames(), ...plan.logRotation };
          const problem = writeStackRecord(
            record,
            { loopdSocket: loopd, runtimeDir, stateDir, pid: process.pid, logs },
            uid,
          );
          if (problem)
            printErr(`boxmaker up: not recorded in ${record} (${problem}); other shells need BOXMAKER_SOCKET\n`);
        },
      });
      let signals = 0;
      const onSignal = (sig: NodeJS.Signals) => {
        signals++;
        if (signals > 1) {
          printErr(`boxmaker up: ${sig} again; exiting without waiting\n`);
          removeStackRecord(record, process.pid);
          process.exit(ExitCode.interrupted);
        }
        printErr(`boxmaker up: ${sig}; stopping the stack\n`);
        void sup.stop(0);
      };
      process.on("SIGINT", onSignal);
      process.on("SIGTERM", onSignal);

      try {
        await sup.start();
      } catch (err) {
        await sup.stop(1);
        removeStackRecord(record, process.pid);
        if (signals > 0) {
          process.exitCode = ExitCode.ok;
          return;
        }
        throw err;
      }
      const code = await sup.done;
      removeStackRecord(record, process.pid);
      process.exitCode = code === 0 ? ExitCode.ok : ExitCode.failed;
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    });
}
