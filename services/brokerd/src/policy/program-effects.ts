import { DYNAMIC } from "./dynamic.js";
import { PROGRAMS, parseOptions } from "./program-options.js";

/**
 * What an option makes a program do beyond what its name suggests: an operator who allows
 * `find`, `sed` or `git` means reading, and `find -delete`, `sed -i`, `awk 'system(…)'` or
 * `git -c core.pager=… log` are writes and programs of the model's choosing. `runs` means
 * code the policy cannot see (a floor of ask, like an opaque line); `writes` means files
 * written (an allow rule does not cover it, as with a `>` redirection).
 */
export interface ProgramEffect {
  kind: "runs" | "writes";
  why: string;
}

type Check = (argv: readonly string[]) => ProgramEffect[];

const runs = (why: string): ProgramEffect => ({ kind: "runs", why });
const writes = (why: string): ProgramEffect => ({ kind: "writes", why });

/**
 * Whether `word` names one of `names` the way getopt_long and git's parse-options read it:
 * exactly, or as an abbreviation (`--in` for `--in-place`). An abbreviation of several names
 * is refused by the program; counting it is the safe side.
 */
function longIs(word: string, names: readonly string[]): boolean {
  if (!word.startsWith("--") || word.length < 3) return false;
  const name = word.split("=")[0]!;
  return names.some((n) => n.startsWith(name));
}

/** A single-dash bundle (`-xIzf`) that contains one of `letters`; bundles hide value letters, so any position counts. */
const bundleHas = (word: string, letters: string) =>
  /^-[^-]/.test(word) && [...word.slice(1)].some((c) => letters.includes(c));

const computed = (name: string): ProgramEffect =>
  runs(`${name} is given a word computed at run time, which could be an option that writes or runs a program`);

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

const SED_LONG = ["--expression", "--file", "--in-place", "--line-length", "--quiet", "--silent", "--debug"].concat(
  ["--posix", "--regexp-extended", "--separate", "--sandbox", "--unbuffered", "--null-data", "--zero-terminated"],
  ["--follow-symlinks", "--binary", "--help", "--version"],
);

const sed: Check = (argv) => {
  const out: ProgramEffect[] = [];
  const scripts: string[] = [];
  let fromOptions = false;
  let operand = false;
  let sandbox = false;
  // GNU sed permutes: an option after the script (`sed 's/a/b/' -i f`) still counts.
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === DYNAMIC) {
      out.push(computed("sed"));
      continue;
    }
    if (a === "--") {
      if (!fromOptions && !operand && i + 1 < argv.length) scripts.push(argv[i + 1]!);
      break;
    }
    if (a.startsWith("--")) {
      const name = a.split("=")[0]!;
      const value = a.includes("=") ? a.slice(a.indexOf("=") + 1) : undefined;
      if (!SED_LONG.some((n) => n.startsWith(name))) out.push(runs(`sed ${name} is not an option the policy knows`));
      else if (longIs(a, ["--in-place"])) out.push(writes("sed --in-place edits files"));
      else if (longIs(a, ["--expression"])) {
        fromOptions = true;
        scripts.push(value ?? argv[++i] ?? "");
      } else if (longIs(a, ["--file"])) {
        fromOptions = true;
        out.push(runs("sed --file reads a script the policy cannot see"));
        if (value === undefined) i++;
      } else if (longIs(a, ["--line-length"]) && value === undefined) i++;
      else if (longIs(a, ["--sandbox"])) sandbox = true;
      continue;
    }
    if (a.startsWith("-") && a !== "-") {
      for (let k = 1; k < a.length; k++) {
        const c = a[k]!;
        const rest = a.slice(k + 1);
        if (c === "i") {
          out.push(writes("sed -i edits files"));
          break;
        }
        if (c === "e" || c === "f" || c === "l") {
          const v = rest || argv[++i];
          if (c === "e") scripts.push(v ?? "");
          if (c === "f") out.push(runs("sed -f reads a script the policy cannot see"));
          if (c !== "l") fromOptions = true;
          break;
        }
        if (!"nrEsuz".includes(c)) out.push(runs(`sed -${c} is not an option the policy knows`));
      }
      continue;
    }
    if (!fromOptions && !operand) scripts.push(a);
    operand = true;
  }
  if (!sandbox) for (const s of scripts) out.push(...sedScriptEffects(s));
  return out;
};

/** Skips a regex delimited by `delim` from `i` (just past the opening delimiter); returns the index past the closing one. */
function skipDelimited(s: string, i: number, delim: string, brackets: boolean): number {
  while (i < s.length) {
    const c = s[i]!;
    if (c === "\\") i += 2;
    else if (c === delim) return i + 1;
    else if (c === "[" && brackets) {
      // GNU sed: a delimiter inside a bracket expression does not end the regex (`s/[/]/x/`).
      let j = i + 1;
      if (s[j] === "^") j++;
      if (s[j] === "]") j++;
      while (j < s.length && s[j] !== "]") {
        if (s[j] === "[" && ":.=".includes(s[j + 1] ?? "")) {
          const close = s.indexOf(`${s[j + 1]}]`, j + 2);
          j = close < 0 ? s.length : close + 2;
        } else j++;
      }
      i = j + 1;
    } else i++;
  }
  return -1;
}

/**
 * The `w`/`W` (write a file) and `e` (run a command) commands of a sed script, and the `w`
 * and `e` flags of `s`. A script this reader cannot follow counts as running a program.
 */
function sedScriptEffects(script: string): ProgramEffect[] {
  if (script === DYNAMIC) return [computed("sed")];
  const unreadable = [runs("the sed script has a part the policy cannot read")];
  const out: ProgramEffect[] = [];
  const s = script;
  let i = 0;
  const toEol = () => {
    while (i < s.length && s[i] !== "\n") i += s[i] === "\\" ? 2 : 1;
  };
  const skipSpace = () => {
    while (i < s.length && " \t".includes(s[i]!)) i++;
  };
  const address = (): boolean => {
    if (/[0-9]/.test(s[i] ?? "")) {
      while (/[0-9~]/.test(s[i] ?? "")) i++;
    } else if (s[i] === "$") i++;
    else if (s[i] === "/" || s[i] === "\\") {
      const delim = s[i] === "\\" ? s[i + 1] : "/";
      if (delim === undefined || delim === "\n") return false;
      const end = skipDelimited(s, i + (s[i] === "\\" ? 2 : 1), delim, true);
      if (end < 0) return false;
      i = end;
      while (s[i] === "I" || s[i] === "M") i++;
    }
    return true;
  };
  while (i < s.length) {
    while (i < s.length && " \t\n;".includes(s[i]!)) i++;
    if (i >= s.length) break;
    if (s[i] === "#") {
      toEol();
      continue;
    }
    if (!address()) return unreadable;
    skipSpace();
    if (s[i] === ",") {
      i++;
      skipSpace();
      if (s[i] === "+" || s[i] === "~") i++;
      if (!address()) return unreadable;
    }
    skipSpace();
    while (s[i] === "!" || s[i] === " ") i++;
    const cmd = s[i++];
    if (cmd === undefined) return unreadable;
    if ("{}=dDgGhHnNpPxzF".includes(cmd)) continue;
    if ("qQlL".includes(cmd)) {
      skipSpace();
      while (/[0-9]/.test(s[i] ?? "")) i++;
    } else if (":btTv".includes(cmd)) {
      while (i < s.length && s[i] !== "\n" && s[i] !== ";") i++;
    } else if ("aicrR".includes(cmd)) toEol();
    else if (cmd === "w" || cmd === "W") {
      out.push(writes(`the sed script writes a file (${cmd})`));
      toEol();
    } else if (cmd === "e") {
      out.push(runs("the sed script runs a command (e)"));
      toEol();
    } else if (cmd === "s" || cmd === "y") {
      const delim = s[i];
      if (delim === undefined || delim === "\n" || delim === "\\") return unreadable;
      const mid = skipDelimited(s, i + 1, delim, cmd === "s");
      if (mid < 0) return unreadable;
      const end = skipDelimited(s, mid, delim, false);
      if (end < 0) return unreadable;
      i = end;
      if (cmd === "y") continue;
      while (i < s.length && !" \t\n;}".includes(s[i]!)) {
        const f = s[i++]!;
        if (f === "e") out.push(runs("the sed s command's e flag runs the result as a command"));
        else if (f === "w") {
          out.push(writes("the sed s command's w flag writes a file"));
          toEol();
        } else if (!/[gpiImM0-9]/.test(f)) return unreadable;
      }
    } else return unreadable;
  }
  return out;
}

const AWKS = ["awk", "gawk", "mawk", "nawk", "original-awk", "busybox-awk"];
const AWK_LONG = ["--assign", "--field-separator", "--file", "--source", "--include", "--load", "--exec"].concat(
  ["--dump-variables", "--pretty-print", "--profile", "--debug", "--sandbox", "--characters-as-bytes", "--csv"],
  ["--traditional", "--copyright", "--gen-pot", "--help", "--lint", "--bignum", "--use-lc-numeric", "--posix"],
  ["--non-decimal-data", "--optimize", "--no-optimize", "--re-interval", "--version", "--lint-old"],
);

const awk: Check = (argv) => {
  const out: ProgramEffect[] = [];
  const name = argv[0]!;
  const programs: string[] = [];
  let fromOptions = false;
  let sandbox = false;
  let i = 1;
  const value = (a: string, rest: string) => (a.includes("=") ? a.slice(a.indexOf("=") + 1) : rest || argv[++i]);
  for (; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === DYNAMIC) {
      out.push(computed(name));
      continue;
    }
    if (a === "--") {
      i++;
      break;
    }
    if (!a.startsWith("-") || a === "-") break;
    if (a.startsWith("--")) {
      const n = a.split("=")[0]!;
      if (!AWK_LONG.some((l) => l.startsWith(n))) out.push(runs(`${name} ${n} is not an option the policy knows`));
      else if (longIs(a, ["--source"])) {
        fromOptions = true;
        programs.push(value(a, "") ?? "");
      } else if (longIs(a, ["--include"])) {
        const lib = value(a, "");
        out.push(lib === "inplace" ? writes(`${name} -i inplace edits files`) : runs(`${name} --include loads code`));
      } else if (longIs(a, ["--file", "--load", "--exec"])) {
        fromOptions = true;
        out.push(runs(`${name} ${n} loads a program the policy cannot see`));
        if (!a.includes("=")) i++;
      } else if (longIs(a, ["--dump-variables", "--pretty-print", "--profile"])) out.push(writes(`${name} ${n}`));
      else if (longIs(a, ["--assign", "--field-separator"]) && !a.includes("=")) i++;
      else if (longIs(a, ["--sandbox"])) sandbox = true;
      continue;
    }
    for (let k = 1; k < a.length; k++) {
      const c = a[k]!;
      const rest = a.slice(k + 1);
      if ("fvFiIlEeW".includes(c)) {
        const v = rest || argv[++i] || "";
        if (c === "e") {
          fromOptions = true;
          programs.push(v);
        } else if (c === "i")
          out.push(v === "inplace" ? writes(`${name} -i inplace edits files`) : runs(`${name} -i loads code`));
        else if (c === "f" || c === "E" || c === "l") {
          fromOptions = true;
          out.push(runs(`${name} -${c} loads a program the policy cannot see`));
        } else if (c === "W") out.push(runs(`${name} -W ${v} is an option the policy does not read`));
        break;
      }
      if ("dop".includes(c)) {
        out.push(writes(`${name} -${c} writes a file`));
        break;
      }
      if (c === "S") sandbox = true;
      else if (!"bcCDghLMnNOPrstVY".includes(c)) out.push(runs(`${name} -${c} is not an option the policy knows`));
    }
  }
  if (!fromOptions) {
    const program = argv[i];
    if (program === undefined) out.push(runs(`${name} without a program`));
    else programs.push(program);
  }
  // --sandbox turns off system(), pipes and redirections.
  if (!sandbox) for (const p of programs) out.push(...(p === DYNAMIC ? [computed(name)] : awkProgramEffects(p)));
  return out;
};

/**
 * awk's ways to write or run: `system(…)`, pipes to and from commands (`|`, `|&`, but not
 * `||`), `print … > file` outside parentheses, and gawk's `@load`/`@include`. Strings are set
 * aside first; a `|` or `>` inside a regex literal is counted anyway (the safe side).
 */
function awkProgramEffects(program: string): ProgramEffect[] {
  const out: ProgramEffect[] = [];
  const p = program.replace(/"(?:[^"\\\n]|\\.)*"/g, '""');
  if (/\bsystem\s*\(/.test(p)) out.push(runs("the awk program calls system()"));
  if (/(^|[^|])\|(?!\|)/.test(p.replace(/\|\|/g, "  "))) out.push(runs("the awk program pipes to or from a command"));
  if (/@(load|include)\b/.test(p)) out.push(runs("the awk program loads code"));
  const stmt = /\bprintf?\b/g;
  for (let m = stmt.exec(p); m; m = stmt.exec(p)) {
    let depth = 0;
    for (let j = m.index + m[0].length; j < p.length; j++) {
      const c = p[j]!;
      if (c === "(") depth++;
      else if (c === ")") depth--;
      else if (depth <= 0 && (c === ";" || c === "\n" || c === "}")) break;
      else if (depth <= 0 && c === ">") {
        out.push(writes("the awk program prints to a file"));
        break;
      }
    }
  }
  return out;
}

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
