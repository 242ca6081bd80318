import { DYNAMIC } from "./dynamic.js";
import { bundleHas, type Check, computed, longIs, type ProgramEffect, runs, writes } from "./program-effects-check.js";
import { AWKS, awk, sed } from "./program-effects-sed-awk.js";
import { PROGRAMS, parseOptions } from "./program-options.js";

const always =
  (why: string): Check =>
  () => [runs(why)];

const find: Check = (argv) => {
  const out: ProgramEffect[] = [];
  for (const a of argv.slice(1)) {
    if (a === DYNAMIC) out.push(computed("find"));
    else if (["-exec", "-execdir", "-ok", "-okdir"].includes(a)) out.push(runs(`find ${a} runs a program`));
    else if (["-delete", "-fprint", "-fprint0", "-fprintf", "-fls"].includes(a)) out.push(writes(`find ${a}`));
  }
  return out;
};

const TAR_RUNS = ["--to-command", "--use-compress-program", "--checkpoint-action", "--info-script"].concat([
  "--new-volume-script",
  "--rsh-command",
  "--rmt-command",
]);

const tar: Check = (argv) => {
  const out: ProgramEffect[] = [];
  argv.slice(1).forEach((a, k) => {
    if (a === DYNAMIC) out.push(computed("tar"));
    else if (a.startsWith("--")) {
      // `--checkpoint` alone is an exact option, not an abbreviation of --checkpoint-action.
      if (a.split("=")[0] !== "--checkpoint" && longIs(a, TAR_RUNS))
        out.push(runs(`tar ${a.split("=")[0]} runs a program`));
    } else if (bundleHas(a, "IF") || (k === 0 && /^[A-Za-z]+$/.test(a) && /[IF]/.test(a)))
      out.push(runs("tar -I/-F runs a program"));
  });
  return out;
};

const rsync: Check = (argv) => {
  const out: ProgramEffect[] = [];
  for (const a of argv.slice(1)) {
    if (a === DYNAMIC) out.push(computed("rsync"));
    else if (longIs(a, ["--rsh", "--rsync-path", "--remote-option"]))
      out.push(runs(`rsync ${a.split("=")[0]} runs a program`));
    else if (longIs(a, ["--log-file", "--write-batch", "--only-write-batch"]))
      out.push(writes(`rsync ${a.split("=")[0]}`));
    else if (bundleHas(a, "eM")) out.push(runs("rsync -e runs a program"));
    else if (!a.startsWith("-") && /^[^/]*:/.test(a)) out.push(runs(`rsync ${a} runs a remote shell`));
  }
  return out;
};

const zip: Check = (argv) =>
  argv.slice(1).some((a) => a === DYNAMIC || bundleHas(a, "T") || longIs(a, ["--test", "--unzip-command"]))
    ? [runs("zip -T/-TT runs a program to test the archive")]
    : [];

const sort: Check = (argv) => {
  const out: ProgramEffect[] = [];
  for (const a of argv.slice(1)) {
    if (a === DYNAMIC) out.push(computed("sort"));
    else if (longIs(a, ["--compress-program"])) out.push(runs("sort --compress-program runs a program"));
    else if (longIs(a, ["--output"]) || bundleHas(a, "o")) out.push(writes("sort -o writes a file"));
  }
  return out;
};

const dd: Check = (argv) =>
  argv.some((a) => a === DYNAMIC || a.startsWith("of=")) ? [writes("dd of= writes a file")] : [];

/**
 * Interpreters run what they are given; an allow on `python3` is taken to mean scripts in
 * the workspace, not code on the command line or from input. Letters: `evals` take code,
 * `names` name the program (python's -m), `writes` edit in place (their value is the rest of
 * the word), `values` take the rest of the word or the next one.
 */
function interpreter(opts: { evals: string; names?: string; writes?: string; values: string; long?: string[] }): Check {
  return (argv) => {
    const name = argv[0]!;
    const out: ProgramEffect[] = [];
    let program = false;
    let i = 1;
    for (; i < argv.length && !program; i++) {
      const a = argv[i]!;
      if (a === DYNAMIC) return [computed(name)];
      if (a === "-") break;
      if (a === "--") {
        program = i + 1 < argv.length;
        break;
      }
      if (!a.startsWith("-")) {
        program = true;
        break;
      }
      if (a.startsWith("--")) {
        if (longIs(a, opts.long ?? [])) {
          out.push(runs(`${name} ${a.split("=")[0]} runs code from the command line`));
          program = true;
        }
        continue;
      }
      for (let k = 1; k < a.length; k++) {
        const c = a[k]!;
        if (opts.evals.includes(c)) {
          out.push(runs(`${name} -${c} runs code from the command line`));
          program = true;
          break;
        }
        if (opts.names?.includes(c)) {
          program = true;
          break;
        }
        if (opts.writes?.includes(c)) {
          out.push(writes(`${name} -${c} edits files in place`));
          break;
        }
        if (opts.values.includes(c)) {
          if (k === a.length - 1) i++;
          break;
        }
      }
    }
    if (!program) out.push(runs(`${name} reads its program from input`));
    return out;
  };
}

const PYTHON = interpreter({ evals: "c", names: "m", values: "WX" });
const PERL = interpreter({ evals: "eEMmdx", writes: "i", values: "I" });
const RUBY = interpreter({ evals: "erx", writes: "i", values: "ICEF" });
const NODE = interpreter({
  evals: "epri",
  values: "",
  long: ["--eval", "--print", "--require", "--import", "--loader", "--experimental-loader", "--interactive"],
});
const PHP = interpreter({ evals: "rBREa", names: "fF", values: "cdz" });

/** `git -c …`, `--config-env`, `--exec-path=…` and subcommand options that name a program to run. */
const git: Check = (argv) => {
  const syntax = PROGRAMS.git!;
  const g = parseOptions(argv, syntax);
  const out: ProgramEffect[] = [];
  if (g.unknown) out.push(runs(`git: ${g.unknown}, before the subcommand`));
  for (const o of g.options) {
    if (syntax.runs?.includes(o.name) && (o.value !== undefined || !syntax.joined?.includes(o.name)))
      out.push(runs(`git ${o.name} sets what git runs`));
  }
  const sub = argv[g.next];
  const args = argv.slice(g.next + 1);
  const opt = (longs: string[], letters = "") =>
    args.find((a) => longIs(a, longs) || (letters !== "" && bundleHas(a, letters)));
  const exec = (o: string | undefined) => o && out.push(runs(`git ${sub} ${o.split("=")[0]} runs a program`));
  switch (sub) {
    case "clone":
      exec(opt(["--upload-pack", "--template", "--config"], "uc"));
      break;
    case "ls-remote":
      exec(opt(["--upload-pack"], "u"));
      break;
    case "fetch":
    case "pull":
    case "fetch-pack":
      exec(opt(["--upload-pack", "--exec"]));
      break;
    case "push":
    case "send-pack":
      exec(opt(["--receive-pack", "--exec"]));
      break;
    case "archive":
      exec(opt(["--exec", "--remote"]));
      break;
    case "init":
      exec(opt(["--template"]));
      break;
    case "rebase":
      exec(opt(["--exec"], "x"));
      break;
    case "grep":
      exec(opt(["--open-files-in-pager"], "O"));
      break;
    case "log":
    case "diff":
    case "show":
    case "whatchanged":
    case "format-patch":
      exec(opt(["--ext-diff"]));
      if (opt(["--output"])) out.push(writes(`git ${sub} --output writes a file`));
      break;
    case "bisect":
      if (args[0] === "run") out.push(runs("git bisect run runs a program"));
      break;
    case "submodule":
      if (args.includes("foreach")) out.push(runs("git submodule foreach runs a program"));
      break;
    case "config":
      // Config names programs (core.pager, core.fsmonitor, aliases with !): setting any is running one later.
      if (!args.some((a) => /^(--get|--list$|-l$|get$|list$)/.test(a))) out.push(runs("git config sets what git runs"));
      break;
    case "filter-branch":
    case "difftool":
    case "mergetool":
    case "send-email":
    case "instaweb":
      out.push(runs(`git ${sub} runs programs`));
      break;
    case DYNAMIC:
      out.push(computed("git"));
      break;
  }
  return out;
};

/** The other table programs: global options that name a program or a config that can. */
const globals: Check = (argv) => {
  const syntax = PROGRAMS[argv[0]!];
  if (!syntax?.runs) return [];
  const g = parseOptions(argv, syntax);
  return g.options
    .filter((o) => syntax.runs!.includes(o.name))
    .map((o) => runs(`${argv[0]} ${o.name} sets what it runs`));
};

const CHECKS: Record<string, Check> = {
  find,
  sed,
  gsed: sed,
  tar,
  gtar: tar,
  rsync,
  zip,
  sort,
  dd,
  git,
  perl: PERL,
  ruby: RUBY,
  node: NODE,
  nodejs: NODE,
  bun: NODE,
  php: PHP,
  ...Object.fromEntries(AWKS.map((n) => [n, awk])),
  ...Object.fromEntries(
    ["make", "gmake", "bmake", "remake"].map((n) => [n, always(`${n} runs the recipes of a makefile`)]),
  ),
  ...Object.fromEntries(["less", "more", "most", "pg"].map((n) => [n, always(`${n} can run shell commands`)])),
  ...Object.fromEntries(
    ["vi", "vim", "nvim", "view", "ex", "rvim", "rview", "vimdiff", "gvim", "emacs", "ed"].map((n) => [
      n,
      always(`${n} runs editor commands, which include shell commands`),
    ]),
  ),
};

/** What options of this command (argv[0] a base name) make it write files or run programs. */
export function effectsOf(argv: readonly string[]): ProgramEffect[] {
  const name = argv[0]!;
  const check = CHECKS[name] ?? (/^(python|pypy)[0-9.]*$/.test(name) ? PYTHON : PROGRAMS[name] ? globals : undefined);
  return check ? check(argv) : [];
}
