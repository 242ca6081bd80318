#!/usr/bin/env node
import { messageOf } from "@boxmaker/common/lite";
import { Command, CommanderError } from "commander";
import { homedir, tmpdir } from "node:os";
import { loadCliConfig } from "./cli-config.js";
import { parseTimeout } from "./connection.js";
import { chooseSocket } from "./socket-choice.js";
import { stackRecordPath } from "./stack-record.js";
import { DaemonUnreachable, UsageError } from "./errors.js";
import { ExitCode, EXIT_CODES_HELP } from "./exit-codes.js";
import { cliVersion } from "./version.js";
import type { GlobalOptions } from "./global-options.js";
import { register as registerRun } from "./commands/run.js";
import { register as registerUp } from "./commands/up.js";
import { register as registerChat } from "./commands/chat.js";
import { register as registerLs } from "./commands/ls.js";
import { register as registerShow } from "./commands/show.js";
import { register as registerAttach } from "./commands/attach.js";
import { register as registerCancel } from "./commands/cancel.js";
import { register as registerApprove } from "./commands/approve.js";
import { register as registerStatus } from "./commands/status.js";
import { register as registerTools } from "./commands/tools.js";
import { register as registerCommands } from "./commands/commands.js";
import { register as registerSchedule } from "./commands/schedule.js";
import { register as registerCompact } from "./commands/compact.js";
import { register as registerMode } from "./commands/mode.js";
import { register as registerProposals } from "./commands/proposals.js";
import { register as registerSessionAdmin } from "./commands/session-admin.js";
import { register as registerExport } from "./commands/export.js";
import { register as registerChanges } from "./commands/changes.js";
import { register as registerDemo } from "./commands/demo.js";
import { register as registerContract } from "./commands/contract.js";
import { register as registerDoctor } from "./commands/doctor.js";
import { register as registerMemoryPlan } from "./commands/memory-plan.js";
import { register as registerHooks } from "./commands/hooks.js";
import { register as registerMcp } from "./commands/mcp.js";
import { register as registerCompletion } from "./commands/completion.js";
import { printErr } from "./render/terminal-safe.js";
import { printPaged } from "./pager.js";
import { usageLine } from "./usage-error.js";

let helpText = "";

const program = new Command("boxmaker")
  .description("Boxmaker: agent sessions on your own llama-server")
  .version(cliVersion(), "-V, --version", "print boxmaker's version")
  .option(
    "--socket <path>",
    "loopd's socket (default: $BOXMAKER_SOCKET, cli.json's socket, the stack `boxmaker up` runs, /run/boxmaker/loopd.sock)",
  )
  .option("--timeout <seconds>", "give up on loopd when it does not answer a call within this (default 30)")
  .option("--no-pager", "print long output as it is, even on a terminal (see $BOXMAKER_PAGER, $PAGER)")
  // A usage error is one line naming the command's help (usage-error.ts), not the whole help.
  // Help (and --version) is kept until the parse is over, then paged like any long text (pager.ts).
  .configureOutput({
    outputError: () => {},
    writeOut: (text) => {
      helpText += text;
    },
  })
  .exitOverride()
  .addHelpText("after", EXIT_CODES_HELP);

// `flags` stands in for the program's own when what is run is not this command line (a completion of another).
const globals = (flags?: { socket?: string }): GlobalOptions => {
  const o = { ...program.opts<{ socket?: string; timeout?: string; pager: boolean }>(), ...flags };
  const timeoutMs = parseTimeout(o.timeout);
  // A broken cli.json is said even when --socket makes its socket moot: it holds the mode too.
  const config = loadCliConfig(process.env, homedir());
  const stackRecord = stackRecordPath(process.env, tmpdir(), process.getuid?.() ?? 0);
  let choice: ReturnType<typeof chooseSocket> | undefined;
  const socket = () => (choice ??= chooseSocket(o.socket, process.env, config, stackRecord));
  return { socket, stackRecord, timeoutMs, mode: config.mode, pager: o.pager };
};

for (const register of [
  registerRun,
  registerUp,
  registerChat,
  registerLs,
  registerShow,
  registerAttach,
  registerCancel,
  registerApprove,
  registerProposals,
  registerSessionAdmin,
  registerExport,
  registerChanges,
  registerDemo,
  registerStatus,
  registerContract,
  registerDoctor,
  registerMemoryPlan,
  registerTools,
  registerCommands,
  registerSchedule,
  registerCompact,
  registerMode,
  registerHooks,
  registerMcp,
  registerCompletion,
]) {
  register(program, globals);
}

// Subcommands inherit the exit override, so their usage errors exit 2 as well.
for (const cmd of program.commands) {
  cmd.exitOverride();
  for (const sub of cmd.commands) sub.exitOverride();
}

// `boxmaker ls | head` closes the pipe early: that is the reader being done, not a crash.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? ExitCode.ok);
    throw err;
  });
}

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    process.exitCode = await exitCodeFor(err);
  }
  if (helpText) {
    await printPaged(helpText, program.opts<{ pager: boolean }>().pager);
  }
}

async function exitCodeFor(err: unknown): Promise<number> {
  if (err instanceof CommanderError) {
    if (err.exitCode === 0) return ExitCode.ok;
    printErr(`${usageLine(program, process.argv.slice(2), err.message)}\n`);
    return ExitCode.usage;
  }
  if (err instanceof UsageError) {
    printErr(`boxmaker: ${err.message}\n`);
    return ExitCode.usage;
  }
  if (err instanceof DaemonUnreachable) {
    printErr(`boxmaker: ${err.message}\n`);
    return ExitCode.unavailable;
  }
  // Loaded here, not at the top: gRPC costs every start ~40 ms, and a failed call has loaded it already.
  const { RpcError, Status } = await import("@boxmaker/common/client");
  if (err instanceof RpcError) {
    printErr(`boxmaker: ${err.message} (${err.statusName})\n`);
    // A daemon that does not answer in time is as unavailable as one that is not there.
    if (err.status === Status.UNAVAILABLE || err.status === Status.DEADLINE_EXCEEDED) return ExitCode.unavailable;
    // loopd rejecting what was asked (a bad cron, an empty message) is a usage error.
    if (err.status === Status.INVALID_ARGUMENT) return ExitCode.usage;
    return ExitCode.failed;
  }
  printErr(`boxmaker: ${messageOf(err)}\n`);
  return ExitCode.failed;
}

await main();
