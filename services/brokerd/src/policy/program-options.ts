import { DYNAMIC } from "./dynamic.js";

/**
 * How programs read the options before their subcommand (or, for wrappers, before the command they
 * run): the one table both the rule matcher (`git -C . push` is `git push`) and the shell analysis
 * (`sudo -Eu root rm` runs `rm`) read. Written from each program's manual and, where installed,
 * checked against the program itself (git 2.39, GNU coreutils/findutils 9.x/4.9, sudo 1.9).
 */
interface OptionSyntax {
  /** Options whose value is the next word, or joined: `--git-dir=x`, and for one letter `-Cx`. */
  value: readonly string[];
  /** Options that take no value. */
  flags: readonly string[];
  /** Options whose value can only be joined (`--exec-path=dir`, xargs `-i{}`); bare, they are flags. */
  joined?: readonly string[];
  /** getopt-style: one-letter flags bundle (`-Eu root` is `-E -u root`). */
  bundles?: boolean;
  /** `-5` is an option (nice's old adjustment form). */
  numeric?: boolean;
  /** nopt (npm): a boolean option may swallow a following `true`/`false`. */
  boolWords?: boolean;
  /** A first word that is not the subcommand (cargo's `+nightly`). */
  leading?: RegExp;
  /** Global options that run a program or load a config that can name one. */
  runs?: readonly string[];
  /** Global options whose value can define a subcommand alias (`git -c alias.p=push p`). */
  definesAlias?: Readonly<Record<string, RegExp>>;
  /** Words that are another subcommand (npm `i` is `install`, cargo `b` is `build`). */
  aliases?: Readonly<Record<string, string>>;
  /** The program runs any unambiguous prefix of a subcommand (npm `publ` is `publish`). */
  abbreviates?: boolean;
  /** Subcommands whose real subcommand comes after N more words (`docker image push`, `yarn workspace w publish`). */
  nested?: Readonly<Record<string, number>>;
  /** A wrapper: words before the command it runs (timeout's DURATION, flock's FILE). */
  operands?: number;
}

const DOCKER_GROUPS = Object.fromEntries(
  ["builder", "buildx", "checkpoint", "config", "container", "context", "image", "manifest", "network", "node"]
    .concat(["plugin", "secret", "service", "stack", "swarm", "system", "trust", "volume", "pod", "machine"])
    .map((g) => [g, 0]),
);

const PIP: OptionSyntax = {
  value: ["--python", "--log", "--keyring-provider", "--proxy", "--retries", "--timeout", "--exists-action"]
    .concat(["--trusted-host", "--cert", "--client-cert", "--cache-dir", "--use-feature", "--use-deprecated"])
    .concat(["--resume-retries"]),
  flags: ["-v", "-vv", "-vvv", "--verbose", "-q", "-qq", "--quiet", "-V", "--version", "-h", "--help"]
    .concat(["--isolated", "--require-virtualenv", "--no-input", "--no-cache-dir", "--disable-pip-version-check"])
    .concat(["--no-color", "--no-python-version-warning", "--debug"]),
  bundles: true,
  runs: ["--python"],
};

/** Programs with subcommands whose global options come first. */
export const PROGRAMS: Readonly<Record<string, OptionSyntax>> = {
  git: {
    value: ["-C", "-c", "--config-env", "--git-dir", "--work-tree", "--namespace", "--super-prefix"],
    flags: ["-v", "--version", "-h", "--help", "-p", "--paginate", "-P", "--no-pager", "--bare"]
      .concat(["--no-replace-objects", "--no-lazy-fetch", "--no-optional-locks", "--no-advice", "--literal-pathspecs"])
      .concat(["--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--html-path", "--man-path"])
      .concat(["--info-path"]),
    joined: ["--exec-path", "--list-cmds", "--attr-source"],
    // -c and --config-env set config (core.pager, core.sshCommand, alias.x=!cmd…); --exec-path picks git's programs.
    runs: ["-c", "--config-env", "--exec-path"],
    definesAlias: { "-c": /^alias\./i, "--config-env": /^alias\./i },
  },
  npm: {
    value: ["-C", "--prefix", "--userconfig", "--globalconfig", "--cache", "--registry", "--reg", "--loglevel"]
      .concat(["-w", "--workspace", "--otp", "--tag", "--access", "--scope", "--script-shell", "--shell"])
      .concat(["--node-options", "-c", "--call", "--before", "--include", "--omit", "-L", "--location"]),
    flags: ["-g", "--global", "-f", "--force", "-y", "--yes", "--no-yes", "-n", "--dry-run", "-s", "--silent"]
      .concat(["-q", "--quiet", "-d", "-dd", "-ddd", "--verbose", "--json", "-p", "--parseable", "--ignore-scripts"])
      .concat(["--ws", "--workspaces", "--iwr", "--include-workspace-root", "--offline", "--prefer-offline"])
      .concat(["--prefer-online", "--no-audit", "--no-fund", "--legacy-peer-deps", "--no-color", "--color"])
      .concat(["--usage", "-h", "--help", "-v", "--version", "--local", "--no-global", "--progress", "--no-progress"]),
    boolWords: true,
    // A config file or shell option decides which program runs a package's scripts.
    runs: ["--script-shell", "--shell", "--node-options", "-c", "--call", "--userconfig", "--globalconfig"],
    aliases: {
      add: "install",
      i: "install",
      in: "install",
      ins: "install",
      inst: "install",
      insta: "install",
      instal: "install",
      isnt: "install",
      isnta: "install",
      isntal: "install",
      isntall: "install",
      it: "install-test",
      cit: "install-ci-test",
      sit: "install-ci-test",
      "clean-install": "ci",
      ic: "ci",
      "install-clean": "ci",
      "isntall-clean": "ci",
      unlink: "uninstall",
      remove: "uninstall",
      rm: "uninstall",
      r: "uninstall",
      un: "uninstall",
      rb: "rebuild",
      list: "ls",
      la: "ll",
      ln: "link",
      create: "init",
      innit: "init",
      u: "update",
      up: "update",
      upgrade: "update",
      udpate: "update",
      c: "config",
      s: "search",
      se: "search",
      find: "search",
      tst: "test",
      t: "test",
      ddp: "dedupe",
      v: "view",
      info: "view",
      show: "view",
      "run-script": "run",
      rum: "run",
      urn: "run",
      x: "exec",
      why: "explain",
      verison: "version",
      author: "owner",
      home: "docs",
      issues: "bugs",
      "dist-tags": "dist-tag",
      "add-user": "adduser",
      ogr: "org",
      hlep: "help",
    },
    abbreviates: true,
  },
  pnpm: {
    value: [
      "-C",
      "--dir",
      "--filter",
      "-F",
      "--filter-prod",
      "--reporter",
      "--loglevel",
      "--workspace-concurrency",
    ].concat(["--test-pattern", "--changed-files-ignore-pattern", "--store-dir", "--virtual-store-dir"]),
    flags: ["-w", "--workspace-root", "-r", "--recursive", "-s", "--silent", "--color", "--no-color"]
      .concat(["--aggregate-output", "--stream", "--use-stderr", "--parallel", "--sort", "--no-sort", "--reverse"])
      .concat(["--include-workspace-root", "--fail-if-no-match", "-h", "--help", "-v", "--version", "--offline"]),
    aliases: { i: "install", add: "install", rm: "remove", uninstall: "remove", un: "remove", up: "update" },
  },
  yarn: {
    value: ["--cwd", "--registry", "--cache-folder", "--modules-folder", "--mutex", "--network-timeout"].concat([
      "--use-yarnrc",
      "--global-folder",
      "--link-folder",
      "--https-proxy",
      "--proxy",
      "--otp",
    ]),
    flags: ["-s", "--silent", "--offline", "--verbose", "--json", "--no-progress", "--ignore-engines"]
      .concat(["--frozen-lockfile", "--prefer-offline", "--no-default-rc", "--emoji", "--non-interactive"])
      .concat(["-h", "--help", "-v", "--version"]),
    runs: ["--use-yarnrc"],
    nested: { workspace: 1 },
  },
  cargo: {
    value: ["--color", "-C", "--config", "-Z", "--explain"],
    flags: ["-v", "-vv", "-vvv", "--verbose", "-q", "--quiet", "--locked", "--offline", "--frozen", "--list"].concat([
      "-V",
      "--version",
      "-h",
      "--help",
    ]),
    bundles: true,
    leading: /^\+/,
    // --config can set target runners, rustc wrappers and aliases.
    runs: ["--config"],
    definesAlias: { "--config": /alias/i },
    aliases: { b: "build", c: "check", d: "doc", t: "test", r: "run", rm: "remove" },
  },
  docker: {
    value: ["--config", "-c", "--context", "-H", "--host", "-l", "--log-level", "--tlscacert", "--tlscert"].concat([
      "--tlskey",
    ]),
    flags: ["-D", "--debug", "--tls", "--tlsverify", "-v", "--version", "--help"],
    bundles: true,
    // A client config names credential helpers, programs docker runs.
    runs: ["--config"],
    nested: DOCKER_GROUPS,
  },
  podman: {
    value: ["--url", "-c", "--connection", "--identity", "--root", "--runroot", "--storage-driver"]
      .concat(["--storage-opt", "--log-level", "--cgroup-manager", "--conmon", "--runtime", "--runtime-flag"])
      .concat(["--events-backend", "--hooks-dir", "--network-cmd-path", "--network-config-dir", "--tmpdir"])
      .concat(["--module", "--cni-config-dir", "--db-backend", "--imagestore", "--out", "--ssh", "--volumepath"]),
    flags: ["-r", "--remote", "--syslog", "--transient-store", "--help", "-h", "-v", "--version", "-D", "--debug"],
    bundles: true,
    runs: ["--conmon", "--runtime", "--hooks-dir", "--network-cmd-path", "--module"],
    nested: DOCKER_GROUPS,
  },
  kubectl: {
    value: ["-n", "--namespace", "--context", "--cluster", "--user", "--kubeconfig", "-s", "--server", "--token"]
      .concat(["--as", "--as-group", "--as-uid", "--certificate-authority", "--client-certificate"])
      .concat(["--client-key", "--cache-dir", "--request-timeout", "--tls-server-name", "-v", "--v", "--vmodule"])
      .concat(["--password", "--username", "--profile", "--profile-output"]),
    flags: [
      "--insecure-skip-tls-verify",
      "--match-server-version",
      "--warnings-as-errors",
      "--disable-compression",
    ].concat(["-h", "--help"]),
    bundles: true,
    // A kubeconfig's user can be an exec credential plugin: any program.
    runs: ["--kubeconfig"],
  },
  pip: PIP,
  pip3: PIP,
  helm: {
    value: ["--burst-limit", "--kube-apiserver", "--kube-as-group", "--kube-as-user", "--kube-ca-file"]
      .concat(["--kube-context", "--kube-tls-server-name", "--kube-token", "--kubeconfig", "-n", "--namespace"])
      .concat(["--qps", "--registry-config", "--repository-cache", "--repository-config", "--content-cache"]),
    flags: ["--debug", "--kube-insecure-skip-tls-verify", "-h", "--help"],
    bundles: true,
    runs: ["--kubeconfig"],
  },
  terraform: { value: ["-chdir"], flags: ["-help", "-h", "--help", "-version", "-v", "--version"] },
  gh: { value: ["-R", "--repo", "--hostname"], flags: ["--help", "-h", "--version"] },
  go: { value: ["-C", "--C"], flags: [] },
};

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

interface ParsedOptions {
  /** Index of the first word after the options: the subcommand, or the wrapped command. */
  next: number;
  /** The options as given, with their values. */
  options: Array<{ name: string; value?: string }>;
  /** Why the options could not be read (an option not in the table, or one computed at run time). */
  unknown?: string;
}

/** Reads the options at the start of `argv` (after the program) as `syntax` describes them. */
export function parseOptions(argv: readonly string[], syntax: OptionSyntax, start = 1): ParsedOptions {
  const out: ParsedOptions = { next: argv.length, options: [] };
  const has = (list: readonly string[] | undefined, n: string) => list?.includes(n) ?? false;
  const known = (n: string) => has(syntax.value, n) || has(syntax.flags, n) || has(syntax.joined, n);
  let i = start;
  while (i < argv.length) {
    const a = argv[i]!;
    if (a === DYNAMIC) return { ...out, next: i, unknown: "an option computed at run time" };
    if (a === "--") return { ...out, next: i + 1 };
    if (i === start && syntax.leading?.test(a)) {
      i++;
      continue;
    }
    if (!a.startsWith("-") || a === "-") return { ...out, next: i };
    i++;
    if (has(syntax.value, a)) {
      out.options.push({ name: a, ...(i < argv.length ? { value: argv[i]! } : {}) });
      i++;
      continue;
    }
    if (has(syntax.flags, a) || has(syntax.joined, a)) {
      out.options.push({ name: a });
      // nopt: `--force false publish` reads `false` as the option's value.
      if (syntax.boolWords && (argv[i] === "true" || argv[i] === "false")) i++;
      continue;
    }
    if (syntax.numeric && /^-\d+$/.test(a)) {
      out.options.push({ name: a });
      continue;
    }
    const unknown = { ...out, next: i - 1, unknown: `${a} is not an option the policy knows` };
    // getopt reads `-C=dir` as -C with the value `=dir`; long options (and single-dash ones
    // of programs that do not bundle, like terraform's -chdir=dir) join their value with `=`.
    if (a.startsWith("--") || !syntax.bundles) {
      const eq = a.indexOf("=");
      const name = a.slice(0, eq);
      if (eq < 2 || !known(name)) return unknown;
      out.options.push({ name, value: a.slice(eq + 1) });
      continue;
    }
    const bundle = readBundle(a, syntax, argv[i]);
    if (!bundle) return unknown;
    out.options.push(...bundle.options);
    if (bundle.usesNext) i++;
  }
  return out;
}

/** getopt's reading of `-abc`: flags until a letter that takes a value, which is the rest or the next word. */
function readBundle(
  a: string,
  syntax: OptionSyntax,
  nextWord: string | undefined,
): { options: ParsedOptions["options"]; usesNext: boolean } | undefined {
  const options: ParsedOptions["options"] = [];
  for (let k = 1; k < a.length; k++) {
    const name = `-${a[k]}`;
    const rest = a.slice(k + 1);
    if (syntax.value.includes(name)) {
      if (rest) return { options: [...options, { name, value: rest }], usesNext: false };
      return {
        options: [...options, { name, ...(nextWord !== undefined ? { value: nextWord } : {}) }],
        usesNext: true,
      };
    }
    if (syntax.joined?.includes(name)) return { options: [...options, { name, value: rest }], usesNext: false };
    if (!syntax.flags.includes(name)) return undefined;
    options.push({ name });
  }
  return { options, usesNext: false };
}

/**
 * Whether the subcommand word `have` is the subcommand `want`, for a program that has
 * aliases or runs abbreviations. An abbreviation is matched by prefix, which also matches
 * the ambiguous ones the program itself refuses: harmless for deny and ask.
 */
export function sameSubcommand(syntax: OptionSyntax, have: string, want: string): boolean {
  if (have === want) return true;
  const canon = (w: string) => syntax.aliases?.[w] ?? w;
  if (canon(have) === canon(want)) return true;
  if (!syntax.abbreviates || have.length === 0 || syntax.aliases?.[have] !== undefined) return false;
  const names = [want, ...Object.entries(syntax.aliases ?? {}).flatMap(([k, v]) => (v === canon(want) ? [k] : []))];
  return names.some((n) => n.startsWith(have));
}
