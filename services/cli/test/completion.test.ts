// Shell completion as a person gets it: the script `boxmaker completion SHELL` prints, run by the real
// shell, calling back the real CLI (a `boxmaker` on PATH) for commands, flags and loopd's ids.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { SessionRole } from "@boxmaker/common";
import { runCli } from "../../../test/support/stack.js";
import { useStack } from "../../../test/support/use-stack.js";
import { requires } from "../../../test/support/requirements.js";
import { tempDir } from "../../../test/support/tmp.js";
import { boxmakerOnPath } from "./support/boxmaker-on-path.js";
import { events, spawnCli, until } from "./support/cli-process.js";
import { Tmux } from "./support/tmux.js";

const run = promisify(execFile);
const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
const GLOBAL_FLAGS = ["--socket", "--timeout", "--no-pager"];

let tmp: ReturnType<typeof tempDir>;
let path: string;
beforeAll(() => {
  tmp = tempDir("bx-compl-");
  path = boxmakerOnPath(tmp.dir);
});
afterAll(() => tmp.cleanup());

/** No stack anywhere: a socket that does not exist, no cli.json, no stack record of `up`. */
const noStack = () => ({
  PATH: path,
  HOME: tmp.dir,
  XDG_CONFIG_HOME: join(tmp.dir, "config"),
  XDG_DATA_HOME: join(tmp.dir, "data"),
  TMPDIR: tmp.dir,
  BOXMAKER_SOCKET: join(tmp.dir, "no-loopd.sock"),
});

/** What bash offers at the end of `line` (TAB after the last word; a trailing space starts a new one). */
async function bashOffers(line: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const words = line.split(" ");
  const script = [
    "source <(boxmaker completion bash)",
    `COMP_WORDS=(${words.map(quote).join(" ")})`,
    `COMP_CWORD=${words.length - 1}`,
    `COMP_LINE=${quote(line)}`,
    `COMP_POINT=${line.length}`,
    "_boxmaker",
    `printf '%s\\n' "\${COMPREPLY[@]}"`,
  ].join("\n");
  const { stdout } = await run("bash", ["--norc", "--noprofile", "-c", script], { env, cwd: tmp.dir });
  return stdout.split("\n").filter(Boolean);
}

/** What fish offers for `line` (its own `complete -C`), each as `value<TAB>description`. */
async function fishOffers(line: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const script = `source (boxmaker completion fish | psub); complete -C ${quote(line)}`;
  const { stdout } = await run("fish", ["--no-config", "-c", script], { env, cwd: tmp.dir });
  return stdout.split("\n").filter(Boolean);
}

/** The first word of each entry of a help section ("Commands:", "Options:", "Budgets:"). */
function helpSection(help: string, heading: RegExp): string[] {
  const out: string[] = [];
  let inside = false;
  for (const line of help.split("\n")) {
    if (/^\S/.test(line)) inside = heading.test(line);
    else if (inside) {
      const m = /^ {2}(\S+)/.exec(line);
      if (m) out.push(m[1]!);
    }
  }
  return out;
}

/** The flags a command's help lists: `-f, --format <format>` gives -f and --format. */
function helpFlags(help: string): string[] {
  return help
    .split("\n")
    .flatMap((l) => /^ {2}(-\w)?(?:, )?(--[a-z][\w-]*)?/.exec(l)?.slice(1) ?? [])
    .filter((f): f is string => !!f);
}

describe("boxmaker completion bash", () => {
  it("registers _boxmaker for boxmaker, and completes the commands and flags help lists", async () => {
    const { stdout: registered } = await run(
      "bash",
      ["--norc", "--noprofile", "-c", "source <(boxmaker completion bash); complete -p boxmaker"],
      { env: noStack() },
    );
    expect(registered.trim()).toBe("complete -F _boxmaker boxmaker");

    const help = (await runCli(["--help"], { env: noStack() })).stdout;
    const commands = helpSection(help, /^Commands:/);
    expect(commands).toEqual(expect.arrayContaining(["run", "show", "export", "completion", "help"]));
    expect((await bashOffers("boxmaker ", noStack())).sort()).toEqual([...commands].sort());
    expect(await bashOffers("boxmaker sh", noStack())).toEqual(["show"]);
    expect(await bashOffers("boxmaker schedule r", noStack())).toEqual(["run", "rm"]);

    const showFlags = await bashOffers("boxmaker show --", noStack());
    expect(showFlags).toEqual(expect.arrayContaining(["--json", "--no-reasoning", "--result-lines", ...GLOBAL_FLAGS]));
    // A flag's value: its words, or file names for a file.
    expect(await bashOffers("boxmaker export -f ", noStack())).toEqual(["md", "jsonl"]);
    expect(await bashOffers("boxmaker --socket /x run --mode auto", noStack())).toEqual(["auto-edit", "auto"]);
    expect(await bashOffers("boxmaker mode s-1 ", noStack())).toEqual(["read-only", "ask", "auto-edit", "auto"]);
    writeFileSync(join(tmp.dir, "transcript.md"), "");
    expect(await bashOffers("boxmaker export -o trans", noStack())).toEqual(["transcript.md"]);
    // A word that is no flag's value nor an argument's completes to nothing rather than to a guess.
    expect(await bashOffers("boxmaker ls --limit ", noStack())).toEqual([]);
  });

  it("offers every flag of every command's --help, and nothing else but the program's own", async () => {
    const help = (await runCli(["--help"], { env: noStack() })).stdout;
    const commands = helpSection(help, /^Commands:/).filter((c) => c !== "help");
    // One command at a time: two dozen CLIs at once on a small machine would be a test of the machine.
    const results = [];
    for (const c of commands) {
      const [own, offered] = await Promise.all([
        runCli([c, "--help"], { env: noStack() }),
        runCli(["__complete", "--", c, "-"], { env: noStack() }),
      ]);
      const words = offered.stdout.split("\n").filter(Boolean);
      results.push({
        c,
        listed: [...helpFlags(own.stdout), ...GLOBAL_FLAGS].sort(),
        offered: words.map((w) => w.split("\t")[0]!).sort(),
      });
    }
    for (const r of results) expect(r.offered, `boxmaker ${r.c} -<TAB>`).toEqual(r.listed);
    expect(results.find((r) => r.c === "run")!.offered).toEqual(
      expect.arrayContaining(["--max-iterations", "--session"]),
    );
  });

  it("completes a session id to nothing, silently and at once, when no stack is up", async () => {
    const r = await runCli(["__complete", "--", "show", ""], { env: noStack() });
    expect(r).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(await bashOffers("boxmaker show ", noStack())).toEqual([]);
  });
});

describe.skipIf(!requires("fish completion", ["fish"]))("boxmaker completion fish", () => {
  it("completes commands with what help says of them, and a flag's words", async () => {
    expect(await fishOffers("boxmaker sho", noStack())).toEqual([
      "show\tprint a session's history: messages, reasoning (dimmed) and framed tool calls",
    ]);
    expect((await fishOffers("boxmaker export --format ", noStack())).sort()).toEqual(["jsonl", "md"]);
    expect(await fishOffers("boxmaker show ", noStack())).toEqual([]);
  });
});

describe("completion of the ids loopd knows", () => {
  const t = useStack("bx-complst-");
  let ids: string[];
  beforeAll(async () => {
    const a = await t.client.createSession({ role: SessionRole.MAIN, title: "fix the parser" });
    const b = await t.client.createSession({ role: SessionRole.MAIN, title: "write the\tREADME" });
    ids = [a.id, b.id];
  });
  const env = () => ({ ...noStack(), BOXMAKER_SOCKET: t.stack.sockets.loopd });

  it("bash offers loopd's session ids for `boxmaker show <TAB>`, a prefix narrows them, --socket picks the stack", async () => {
    expect((await bashOffers("boxmaker show ", env())).sort()).toEqual([...ids].sort());
    expect(await bashOffers(`boxmaker show ${ids[0]!.slice(0, -3)}`, env())).toEqual([ids[0]]);
    expect((await bashOffers("boxmaker run --session ", env())).sort()).toEqual([...ids].sort());
    // The line's own --socket, not the environment's, says which stack to ask.
    expect((await bashOffers(`boxmaker --socket ${t.stack.sockets.loopd} rm `, noStack())).sort()).toEqual(
      [...ids].sort(),
    );
  });

  it.skipIf(!requires("fish completion", ["fish"]))("fish shows each session id with its title", async () => {
    const offered = await fishOffers("boxmaker export ", env());
    // A tab in a title would split the line: it is a space in the description.
    expect(offered.sort()).toEqual([`${ids[0]}\tfix the parser · idle`, `${ids[1]}\twrite the README · idle`].sort());
  });

  it("bash offers the proposal waiting for `boxmaker approve <TAB>`", async () => {
    t.stack.sim.enqueue({ toolCalls: [{ name: "write_file", arguments: '{"path": "later.txt", "content": "x"}' }] });
    t.stack.sim.enqueue({ content: "Fine, not now." });
    const runner = spawnCli(t.stack, ["run", "--json", "write", "later.txt"]);
    await until(() => runner.stdout().includes("TOOL_DECISION_STAGED"), "the staged decision");
    const proposal = events(runner.stdout()).find((e) => e.tool_decision)!.tool_decision.proposal_id as string;
    expect(await bashOffers("boxmaker approve ", env())).toEqual([proposal]);
    expect(await bashOffers("boxmaker reject p", env())).toEqual([proposal]);
    expect((await t.stack.cli(["reject", "-y", proposal])).code).toBe(0);
    expect(await runner.exited).toBe(4);
    expect(await bashOffers("boxmaker approve ", env())).toEqual([]);
  });

  describe.skipIf(!requires("zsh completion on a terminal", ["zsh", "tmux"]))("in an interactive zsh", () => {
    let tmux: Tmux;
    afterAll(() => tmux?.kill());

    it("completes a command, then lists the session ids with their titles", async () => {
      tmux = new Tmux();
      const vars = { ...env(), TERM: "xterm-256color", PS1: "zsh> " };
      const set = Object.entries(vars).map(([k, v]) => quote(`${k}=${v}`));
      const pane = await tmux.start(`env -i ${set.join(" ")} zsh -f`);
      await tmux.waitFor(pane, (s) => s.includes("zsh>"), "zsh's prompt");
      await tmux.type(pane, "autoload -U compinit && compinit -u && source <(boxmaker completion zsh) && echo ready");
      await tmux.waitFor(pane, (s) => /^ready$/m.test(s), "the completion to load");
      await tmux.keys(pane, "-l", "boxmaker sho");
      await tmux.keys(pane, "Tab");
      await tmux.waitFor(pane, (s) => /zsh> boxmaker show $/m.test(s), "show to complete");
      // Both ids start alike: the first TAB completes what they share, the second lists them.
      await tmux.keys(pane, "Tab");
      await tmux.waitFor(pane, (s) => /zsh> boxmaker show s-\S+$/m.test(s), "the ids' common start");
      await tmux.keys(pane, "Tab");
      const listed = await tmux.waitFor(pane, (s) => s.includes("fix the parser"), "the session ids");
      for (const id of ids) expect(listed).toContain(id);
      expect(listed).toContain("write the README · idle");
    });
  });

  it("offers archived sessions too (show, export, rm take them), after the live ones and marked archived", async () => {
    const old = await t.client.createSession({ role: SessionRole.MAIN, title: "last year's release" });
    await t.client.archiveSession({ id: old.id });
    const offered = await bashOffers("boxmaker show ", env());
    for (const id of [...ids, old.id]) expect(offered).toContain(id);
    expect(await bashOffers(`boxmaker export ${old.id.slice(0, -2)}`, env())).toEqual([old.id]);
    // What every shell's script reads: the live sessions first, then the archived, each with its line.
    const lines = (await t.stack.cli(["__complete", "show", ""])).stdout.split("\n").filter(Boolean);
    expect(lines).toHaveLength(offered.length);
    expect(lines.at(-1)).toBe(`${old.id}\tlast year's release · archived`);
  });
});
