import { parseArgs } from "node:util";
import { ConfigError } from "./config.js";
import { messageOf } from "./errors.js";
import { packageVersion } from "./version.js";

/** A daemon as its command line knows it. */
export interface DaemonCommand {
  name: "inferproxy" | "brokerd" | "loopd";
  /** What it does, for --help. */
  about: string;
  /** The environment variable that names its config when --config does not. */
  envVar: string;
  /**
   * Reads a config file and makes every check the daemon makes of it at start
   * that does not depend on the machine (no directory, socket or peer is
   * touched), throwing the one-line ConfigError it would exit with. The
   * NixOS module runs it at build (`--check-config`) so nixos-rebuild refuses
   * what the unit would refuse hours later.
   */
  check: (path: string) => void;
}

/** What the command line asks: run (with the --config path, if given), help, version, or a usage error. */
export type DaemonArgs =
  | { kind: "run"; configPath: string | undefined }
  | { kind: "check"; configPath: string }
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "usage"; message: string };

/** Every flag a daemon takes; all else is refused, so a typo never starts it on its defaults. */
const OPTIONS = {
  config: { type: "string" },
  "check-config": { type: "string" },
  version: { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

const VALID = "--config FILE, --check-config FILE, --version, --help";

/** Reads a daemon's arguments (argv without node and the script). Pure: nothing printed, nothing exits. */
export function parseDaemonArgs(argv: readonly string[], name: string): DaemonArgs {
  let values: { config?: string; "check-config"?: string; version?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }));
  } catch (err) {
    return { kind: "usage", message: `${name}: ${usageProblem(err)} (valid: ${VALID}); see ${name} --help` };
  }
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  const check = values["check-config"];
  if (check !== undefined) {
    if (values.config !== undefined)
      return { kind: "usage", message: `${name}: --check-config names the file to check; leave --config out` };
    return { kind: "check", configPath: check };
  }
  return { kind: "run", configPath: values.config };
}

/** parseArgs's error as a few words naming the argument; its own message is a paragraph. */
function usageProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code;
  const message = err instanceof Error ? err.message : String(err);
  const arg = /'([^']*)'/.exec(message)?.[1] ?? "";
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return `unknown option ${arg}`;
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") return `unexpected argument ${JSON.stringify(arg)}`;
  // A missing value, or one that looks like a flag (`--config --version`).
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE")
    return `${/--check-config/.test(message) ? "--check-config" : "--config"} needs a file`;
  return message.split("\n")[0]!;
}

export function daemonHelp(d: DaemonCommand): string {
  return `usage: ${d.name} [--config FILE]

${d.about}

  --config FILE  the JSON config file; default: $${d.envVar}, and with
                 neither the built-in defaults (sockets in /run/boxmaker)
  --check-config FILE
                 check FILE as the daemon would at start, without starting:
                 "FILE: ok" and exit 0, or the one line it would refuse with
                 and exit 2 (directories, sockets and peers are not checked)
  --version      print the version and exit
  -h, --help     print this help and exit

A bad argument or config is one line on stderr and exit status 2.
`;
}

/**
 * The config path a daemon starts with, from its command line or else its
 * environment variable. `--help`, `--version` and a bad argument are handled
 * here, before anything is read or created: print and exit (0, 0, 2).
 */
export function daemonConfigPath(
  d: DaemonCommand,
  moduleUrl: string,
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const args = parseDaemonArgs(argv, d.name);
  switch (args.kind) {
    case "help":
      process.stdout.write(daemonHelp(d));
      return process.exit(0);
    case "version":
      process.stdout.write(`${packageVersion(moduleUrl)}\n`);
      return process.exit(0);
    case "usage":
      process.stderr.write(`${args.message}\n`);
      return process.exit(2);
    case "check":
      try {
        d.check(args.configPath);
      } catch (err) {
        // The same line and status as a start on this file; anything else is not the file's fault.
        if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
        else process.stderr.write(`${d.name}: could not check ${args.configPath}: ${messageOf(err)}\n`);
        return process.exit(err instanceof ConfigError ? 2 : 1);
      }
      process.stdout.write(`${args.configPath}: ok\n`);
      return process.exit(0);
    case "run":
      // `--config=` is "" (refused by loadConfig), not "no config": a unit that lost its path must not run on defaults.
      return args.configPath ?? (env[d.envVar] || undefined);
  }
}
