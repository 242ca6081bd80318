// Long output on a terminal opens in a pager; on a pipe, with --no-pager or a pager set to nothing it is printed.
// Through a real pseudo-terminal (tmux) 100 columns by 12 rows, with a pager script that keeps what it was given.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useStack } from "../../../test/support/use-stack.js";
import { requires } from "../../../test/support/requirements.js";
import { Tmux } from "./support/tmux.js";

const SMALL = { columns: 100, rows: 12 };

describe.skipIf(!requires("the pager on a terminal (pty tests)", ["tmux"]))("boxmaker's pager", () => {
  const t = useStack("bx-pager-");
  let tmux: Tmux | undefined;
  let session: string;
  let pager: string;
  let seen: { ran: string; stdin: string };

  beforeAll(async () => {
    // 40 lines of answer, one holding a clear-screen escape the model wrote: data, to be shown, never obeyed.
    const answer = Array.from({ length: 40 }, (_, i) => `answer line ${i + 1}`).join("\n");
    t.stack.sim.enqueue({ content: `${answer}\nthe end \u001b[2J.` });
    const r = await t.stack.cli(["run", "--json", "write forty lines"]);
    expect(r.code, r.stderr).toBe(0);
    session = (await t.client.listSessions({})).sessions[0]!.id;
    // The fake pager says it ran, with which LESS, and keeps its stdin.
    seen = { ran: join(t.dir, "pager-ran"), stdin: join(t.dir, "pager-stdin") };
    pager = join(t.dir, "pager.sh");
    writeFileSync(
      pager,
      `#!/bin/sh\necho "LESS=\${LESS-unset}" > '${seen.ran}'\ncat > '${seen.stdin}'\necho "[pager done]"\n`,
    );
    chmodSync(pager, 0o755);
  });
  afterEach(async () => {
    await tmux?.kill();
    tmux = undefined;
    for (const f of Object.values(seen)) if (existsSync(f)) writeFileSync(f, "");
  });

  const env = (more: Record<string, string | undefined> = {}) => ({
    BOXMAKER_SOCKET: t.stack.sockets.loopd,
    NO_COLOR: undefined,
    FORCE_COLOR: undefined,
    TERM: "xterm-256color",
    BOXMAKER_PAGER: undefined,
    PAGER: pager,
    LESS: undefined,
    ...more,
  });
  const ran = () => existsSync(seen.ran) && readFileSync(seen.ran, "utf8") !== "";

  /** Runs `line` in a small terminal until it prints its exit code; the screen then. */
  async function onTerminal(line: string): Promise<string> {
    tmux = new Tmux();
    const pane = await tmux.start(line, SMALL);
    return tmux.waitFor(pane, (s) => /\[exit \d+\]/.test(s), "the command to exit");
  }

  it("`boxmaker show ID` taller than the terminal goes to $PAGER, colours and shown controls included", async () => {
    const screen = await onTerminal(Tmux.cliLine(["show", session], env()));
    expect(screen).toContain("[pager done]");
    expect(screen).toContain("[exit 0]");
    // A pager that is not less is run with the environment as it is.
    expect(readFileSync(seen.ran, "utf8").trim()).toBe("LESS=unset");
    const given = readFileSync(seen.stdin, "utf8");
    expect(given).toContain("answer line 1\n");
    expect(given).toContain("answer line 40\n");
    // The CLI's colours reach the pager as escapes (less -R shows them); the model's escape as ␛.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a colour escape is what this checks for.
    expect(given).toMatch(/\x1b\[[0-9;]*m/);
    expect(given).toContain("the end ␛[2J.");
    expect(given).not.toContain("\x1b[2J");
  });

  it("`boxmaker --help` is paged too; --no-pager, BOXMAKER_PAGER= and PAGER=cat print it as it is", async () => {
    await onTerminal(Tmux.cliLine(["--help"], env()));
    expect(readFileSync(seen.stdin, "utf8")).toContain("Usage: boxmaker [options] [command]");

    for (const [args, more] of [
      [["show", "--no-pager", session], {}],
      [["show", session], { BOXMAKER_PAGER: "" }],
      [["show", session], { PAGER: "cat" }],
    ] as const) {
      writeFileSync(seen.ran, "");
      const screen = await onTerminal(Tmux.cliLine([...args], env(more)));
      expect(ran(), `${args.join(" ")} ${JSON.stringify(more)}`).toBe(false);
      expect(screen).toContain("answer line 40");
      expect(screen).toContain("[exit 0]");
      await tmux?.kill();
    }
  });

  it("piped, or short enough to fit, the output is printed without a pager", async () => {
    const piped = `${Tmux.cliCommand(["show", session], env())} | tail -n 3; echo "[exit $?]"; sleep 3600`;
    const screen = await onTerminal(piped);
    expect(ran()).toBe(false);
    expect(screen).toContain("answer line 40");
    await tmux?.kill();

    // --version comes the same way --help does.
    const short = await onTerminal(Tmux.cliLine(["--version"], env()));
    expect(ran()).toBe(false);
    expect(short).toMatch(/^\d+\.\d+\.\d+$/m);
  });

  it("a pager that does not start leaves the output printed", async () => {
    const screen = await onTerminal(Tmux.cliLine(["show", session], env({ PAGER: join(t.dir, "no-such-pager") })));
    expect(screen).toContain("answer line 40");
    expect(screen).toContain("[exit 0]");
  });

  it.skipIf(!requires("the default pager", ["less"]))(
    "without $PAGER it is less -FRX: the first screenful in colour, q quits and leaves it on the screen",
    async () => {
      tmux = new Tmux();
      const pane = await tmux.start(Tmux.cliLine(["show", session], env({ PAGER: undefined })), SMALL);
      const first = await tmux.waitFor(pane, (s) => s.includes("answer line 1"), "less's first screenful");
      expect(first).not.toContain("answer line 40");
      expect(first).not.toContain("[exit");
      // biome-ignore lint/suspicious/noControlCharactersInRegex: colour on less's screen is what this checks for.
      expect(await tmux.screen(pane, true)).toMatch(/\x1b\[[0-9;]*m/);
      await tmux.keys(pane, "q");
      const after = await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "show to exit after q");
      expect(after).toContain("answer line");
    },
  );
});
