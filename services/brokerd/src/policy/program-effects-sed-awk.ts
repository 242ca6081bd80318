import { DYNAMIC } from "./dynamic.js";
import { type Check, computed, longIs, type ProgramEffect, runs, writes } from "./program-effects-check.js";

const SED_LONG = ["--expression", "--file", "--in-place", "--line-length", "--quiet", "--silent", "--debug"].concat(
  ["--posix", "--regexp-extended", "--separate", "--sandbox", "--unbuffered", "--null-data", "--zero-terminated"],
  ["--follow-symlinks", "--binary", "--help", "--version"],
);

export const sed: Check = (argv) => {
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

export const AWKS = ["awk", "gawk", "mawk", "nawk", "original-awk", "busybox-awk"];
const AWK_LONG = ["--assign", "--field-separator", "--file", "--source", "--include", "--load", "--exec"].concat(
  ["--dump-variables", "--pretty-print", "--profile", "--debug", "--sandbox", "--characters-as-bytes", "--csv"],
  ["--traditional", "--copyright", "--gen-pot", "--help", "--lint", "--bignum", "--use-lc-numeric", "--posix"],
  ["--non-decimal-data", "--optimize", "--no-optimize", "--re-interval", "--version", "--lint-old"],
);

export const awk: Check = (argv) => {
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
