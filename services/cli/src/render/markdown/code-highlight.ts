// Colour for a fenced code block's lines: keywords, strings, comments and
// numbers of the languages models write most. Colour only: every character
// of the line is kept where it was, so what a person copies is the code.
import type { Style } from "../style.js";

interface Language {
  keywords: ReadonlySet<string>;
  /** What starts a comment that runs to the end of the line. */
  lineComment: readonly string[];
  /** C-style block comments. */
  blockComment: boolean;
  /** Quote characters that open a string. */
  quotes: string;
}

const words = (text: string): ReadonlySet<string> => new Set(text.split(/\s+/).filter(Boolean));

const C_LIKE = { lineComment: ["//"], blockComment: true, quotes: `"'` };
const HASH = { lineComment: ["#"], blockComment: false, quotes: `"'` };

const JS = {
  ...C_LIKE,
  quotes: "\"'`",
  keywords: words(`async await break case catch class const continue debugger default delete do else enum export
    extends false finally for from function if implements import in instanceof interface let new null of private
    protected public readonly return static super switch this throw true try type typeof undefined var void while
    yield as satisfies declare namespace abstract keyof`),
};
const PYTHON = {
  ...HASH,
  keywords: words(`False None True and as assert async await break class continue def del elif else except finally
    for from global if import in is lambda nonlocal not or pass raise return try while with yield match case self`),
};
const SHELL = {
  ...HASH,
  keywords: words(`if then else elif fi case esac for while until do done in function return exit export local
    readonly set unset shift trap source echo cd`),
};
const RUST = {
  ...C_LIKE,
  keywords: words(`as async await break const continue crate dyn else enum extern false fn for if impl in let loop
    match mod move mut pub ref return self Self static struct super trait true type unsafe use where while Some None
    Ok Err`),
};
const GO = {
  ...C_LIKE,
  quotes: "\"'`",
  keywords: words(`break case chan const continue default defer else fallthrough for func go goto if import interface
    map package range return select struct switch type var nil true false`),
};
const C = {
  ...C_LIKE,
  keywords: words(`auto break case char const continue default do double else enum extern float for goto if inline
    int long register return short signed sizeof static struct switch typedef union unsigned void volatile while
    class namespace template typename public private protected virtual override new delete this true false nullptr
    bool include define`),
};
const JAVA = {
  ...C_LIKE,
  keywords: words(`abstract boolean break byte case catch char class const continue default do double else enum
    extends final finally float for if implements import instanceof int interface long new null package private
    protected public return short static super switch this throw throws try void while true false var val fun
    when object`),
};
const SQL = {
  lineComment: ["--"],
  blockComment: true,
  quotes: `'"`,
  keywords: words(`select from where and or not insert into values update set delete create table drop alter index
    join left right inner outer on group by order having limit as null is in primary key default SELECT FROM WHERE
    AND OR NOT INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE DROP ALTER INDEX JOIN LEFT RIGHT INNER OUTER ON
    GROUP BY ORDER HAVING LIMIT AS NULL IS IN PRIMARY KEY DEFAULT`),
};
const NIX = {
  ...HASH,
  keywords: words(`let in with rec inherit if then else assert import true false null`),
};
const DATA = { ...HASH, keywords: words("true false null yes no on off") };

const LANGUAGES: Record<string, Language> = {
  js: JS,
  javascript: JS,
  jsx: JS,
  ts: JS,
  typescript: JS,
  tsx: JS,
  mjs: JS,
  json: { ...C_LIKE, keywords: words("true false null") },
  py: PYTHON,
  python: PYTHON,
  sh: SHELL,
  bash: SHELL,
  zsh: SHELL,
  shell: SHELL,
  console: SHELL,
  fish: SHELL,
  rs: RUST,
  rust: RUST,
  go: GO,
  c: C,
  h: C,
  cpp: C,
  "c++": C,
  cc: C,
  java: JAVA,
  kotlin: JAVA,
  kt: JAVA,
  cs: JAVA,
  csharp: JAVA,
  sql: SQL,
  nix: NIX,
  yaml: DATA,
  yml: DATA,
  toml: DATA,
  ini: DATA,
  dockerfile: { ...HASH, keywords: words("FROM RUN CMD COPY ADD ENV ARG WORKDIR ENTRYPOINT EXPOSE USER VOLUME LABEL") },
  makefile: SHELL,
};

/** Highlights the lines of one code block, in order (a block comment carries from line to line). */
export class CodeHighlighter {
  private readonly lang: Language | undefined;
  private inBlockComment = false;

  constructor(
    info: string,
    private readonly s: Style,
  ) {
    this.lang = LANGUAGES[info.toLowerCase()];
  }

  line(text: string): string {
    const lang = this.lang;
    if (!lang) return text;
    const s = this.s;
    let out = "";
    let i = 0;
    while (i < text.length) {
      if (this.inBlockComment) {
        const end = text.indexOf("*/", i);
        const stop = end < 0 ? text.length : end + 2;
        out += s.dim(text.slice(i, stop));
        i = stop;
        if (end >= 0) this.inBlockComment = false;
        continue;
      }
      const rest = text.slice(i);
      if (lang.blockComment && rest.startsWith("/*")) {
        this.inBlockComment = true;
        out += s.dim("/*");
        i += 2;
        continue;
      }
      if (lang.lineComment.some((m) => rest.startsWith(m) && (m !== "#" || i === 0 || /\s/.test(text[i - 1]!)))) {
        out += s.dim(rest);
        break;
      }
      const c = text[i]!;
      if (lang.quotes.includes(c)) {
        let j = i + 1;
        while (j < text.length && text[j] !== c) j += text[j] === "\\" ? 2 : 1;
        const stop = Math.min(j + 1, text.length);
        out += s.green(text.slice(i, stop));
        i = stop;
        continue;
      }
      const word = /^[A-Za-z_$][\w$]*/.exec(rest);
      if (word) {
        out += lang.keywords.has(word[0]) ? s.magenta(word[0]) : word[0];
        i += word[0].length;
        continue;
      }
      const num = /^\d[\w.]*/.exec(rest);
      if (num && !/[\w$]/.test(text[i - 1] ?? "")) {
        out += s.yellow(num[0]);
        i += num[0].length;
        continue;
      }
      out += c;
      i++;
    }
    return out;
  }
}
