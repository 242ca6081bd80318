import { DYNAMIC } from "./dynamic.js";
import type { OptionSyntax } from "./program-options-syntax.js";

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
