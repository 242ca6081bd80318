#!/usr/bin/env node
import { Command, CommanderError } from "commander";
import { resolveSocket, DaemonUnreachable } from "./connection.js";
import { ExitCode, EXIT_CODES_HELP } from "./exit-codes.js";
import { UsageError } from "./usage-error.js";
import type { GlobalOptions } from "./global-options.js";
import { register as registerRun } from "./commands/run.js";

const program = new Command("boxmaker")
  .description("Boxmaker: agent sessions on your own llama-server")
  .option("--socket <path>", "loopd's socket (default: $BOXMAKER_SOCKET or /run/boxmaker/loopd.sock)")
  .showHelpAfterError()
  .exitOverride()
  .addHelpText("after", EXIT_CODES_HELP);

const globals = (): GlobalOptions => ({ socket: resolveSocket(program.opts<{ socket?: string }>().socket) });

for (const register of [registerRun]) register(program, globals);

async function main(): Promise<void> {
  try {
    await program.parseAsync(process.argv);
  } catch (err) {
    process.exitCode = exitCodeFor(err);
  }
}

function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) {
    return err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  }
  if (err instanceof UsageError) {
    process.stderr.write(`boxmaker: ${err.message}\n`);
    return ExitCode.usage;
  }
  if (err instanceof DaemonUnreachable) {
    process.stderr.write(`boxmaker: ${err.message}\n`);
    return ExitCode.unavailable;
  }
  const e = err as { name?: string; codeName?: string; message?: string; code?: number };
  if (e?.name === "RpcError") {
    process.stderr.write(`boxmaker: ${e.codeName}: ${e.message}\n`);
    return e.codeName === "UNAVAILABLE" ? ExitCode.unavailable : ExitCode.failed;
  }
  process.stderr.write(`boxmaker: ${e?.message ?? String(err)}\n`);
  return ExitCode.failed;
}

await main();
