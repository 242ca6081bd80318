import type { OptionSyntax } from "./program-options-syntax.js";

/** Wrappers: programs that run the command after their options (and operands). */
export const WRAPPERS: Readonly<Record<string, OptionSyntax>> = {
  command: { value: [], flags: ["-p"], bundles: true },
  builtin: { value: [], flags: [] },
  exec: { value: ["-a"], flags: ["-c", "-l"], bundles: true },
  nohup: { value: [], flags: [] },
  time: {
    value: ["-o", "--output", "-f", "--format"],
    flags: ["-p", "-a", "--append", "-v", "--verbose", "-q", "--quiet", "--portability"],
    bundles: true,
  },
  setsid: { value: [], flags: ["-c", "--ctty", "-f", "--fork", "-w", "--wait"], bundles: true },
  stdbuf: { value: ["-i", "-o", "-e", "--input", "--output", "--error"], flags: [], bundles: true },
  ionice: {
    value: ["-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"],
    flags: ["-t", "--ignore"],
    bundles: true,
  },
  chrt: {
    value: ["-T", "--sched-runtime", "-P", "--sched-period", "-D", "--sched-deadline"],
    flags: [
      "-a",
      "--all-tasks",
      "-b",
      "--batch",
      "-d",
      "--deadline",
      "-e",
      "--ext",
      "-f",
      "--fifo",
      "-i",
      "--idle",
    ].concat(["-o", "--other", "-r", "--rr", "-R", "--reset-on-fork", "-v", "--verbose"]),
    bundles: true,
    operands: 1,
  },
  taskset: { value: [], flags: ["-a", "--all-tasks", "-c", "--cpu-list"], bundles: true, operands: 1 },
  unbuffer: { value: [], flags: ["-p"] },
  doas: { value: ["-u", "-C"], flags: ["-n", "-s", "-L"], bundles: true },
  fakeroot: {
    value: ["-l", "--lib", "--faked", "-s", "-i", "-b"],
    flags: ["-u", "--unknown-is-real"],
    bundles: true,
  },
  flock: {
    value: ["-w", "--timeout", "--wait", "-E", "--conflict-exit-code"],
    flags: ["-s", "--shared", "-x", "-e", "--exclusive", "-n", "--nb", "--nonblock", "-u", "--unlock"].concat([
      "-o",
      "--close",
      "-F",
      "--no-fork",
      "--verbose",
    ]),
    bundles: true,
    operands: 1,
  },
  sudo: {
    value: ["-a", "-C", "--close-from", "-c", "--login-class", "-D", "--chdir", "-g", "--group", "-p", "--prompt"]
      .concat(["-R", "--chroot", "-r", "--role", "-T", "--command-timeout", "-t", "--type", "-U", "--other-user"])
      .concat(["-u", "--user"]),
    flags: ["-A", "--askpass", "-b", "--background", "-B", "--bell", "-E", "-e", "--edit", "-H", "--set-home"]
      .concat(["-i", "--login", "-K", "--remove-timestamp", "-k", "--reset-timestamp", "-N", "--no-update"])
      .concat(["-n", "--non-interactive", "-P", "--preserve-groups", "-S", "--stdin", "-s", "--shell"]),
    joined: ["-h", "--host", "--preserve-env"],
    bundles: true,
  },
  nice: { value: ["-n", "--adjustment"], flags: [], bundles: true, numeric: true },
  timeout: {
    value: ["-s", "--signal", "-k", "--kill-after"],
    flags: ["--foreground", "--preserve-status", "-v", "--verbose"],
    bundles: true,
    operands: 1,
  },
  env: {
    value: ["-u", "--unset", "-C", "--chdir", "-S", "--split-string", "-a", "--argv0"],
    flags: ["-i", "--ignore-environment", "-0", "--null", "-v", "--debug", "--list-signal-handling"],
    joined: ["--block-signal", "--default-signal", "--ignore-signal"],
    bundles: true,
  },
  xargs: {
    value: ["-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args", "-P", "--max-procs"].concat([
      "-s",
      "--max-chars",
      "--process-slot-var",
    ]),
    flags: ["-0", "--null", "-o", "--open-tty", "-p", "--interactive", "-r", "--no-run-if-empty", "-t"].concat([
      "--verbose",
      "-x",
      "--exit",
      "--show-limits",
    ]),
    // `-i` and `-l` take an optional value, joined only: `xargs -i rm {}` runs rm.
    joined: ["-i", "--replace", "-l", "--max-lines", "-e", "--eof"],
    bundles: true,
  },
};
