import { describe, expect, it } from "vitest";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * #32: a long prompt written in the person's $EDITOR — Ctrl-G (or /edit) in
 * chat, `run --edit` — through a real terminal against the whole stack.
 * The editor is a script that edits as a person would and records what it
 * was given: the file, its first content, and whether it had the terminal.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))("the prompt in $EDITOR", () => {
  const c = useChatTty("bxed-");
  const t = c.t;

  function editor(name: string, body: string): { env: Record<string, string | undefined>; seen: string } {
    const seen = join(t.dir, `${name}.seen`);
    const script = join(t.dir, `${name}.sh`);
    writeFileSync(
      script,
      `#!/bin/sh\n{ echo "file=$2"; if [ -t 0 ] && [ -t 2 ]; then echo tty=yes; else echo tty=no; fi; echo ---; cat "$2"; } > '${seen}'\n${body}\n`,
    );
    chmodSync(script, 0o755);
    // With an argument, as `code --wait` is: the shell splits it, the file comes last.
    return { env: { ...c.env(), VISUAL: undefined, EDITOR: `${script} --flag` }, seen };
  }
  const lastUser = () => c.userMessages().at(-1);

  it("Ctrl-G in chat opens the editor on the line typed so far, on the terminal, and sends what was saved", async () => {
    const ed = editor("ctrlg", `printf 'second line\\n  indented third\\n' >> "$2"`);
    t.stack.sim.enqueue({ content: "Noted." });
    const tmux = c.newTmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], ed.env));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-G writes it in $EDITOR"), "the chat prompt");
    await tmux.command("send-keys", "-t", chat, "-l", "fix the parser");
    await tmux.keys(chat, "C-g");
    const done = await tmux.waitFor(chat, (s) => /— stop · 1 request/.test(s), "the turn");
    expect(done).toContain("sending: fix the parser (+2 lines)");
    expect(lastUser()).toBe("fix the parser\nsecond line\n  indented third");
    const seen = readFileSync(ed.seen, "utf8");
    expect(seen).toContain("tty=yes");
    expect(seen).toContain("---\nfix the parser\n");
    // The temporary file is gone, and was private while it lived.
    const file = /file=(.*)/.exec(seen)![1]!;
    expect(file).toMatch(/PROMPT\.md$/);
    expect(existsSync(file)).toBe(false);
    // The chat goes on: the next line is typed as usual.
    t.stack.sim.enqueue({ content: "Again." });
    await tmux.type(chat, "plain message");
    await tmux.waitFor(chat, (s) => (s.match(/— stop · 1 request/g)?.length ?? 0) === 2, "the second turn");
    expect(lastUser()).toBe("plain message");
  });

  it("an editor that fails or leaves the file empty sends nothing, and the chat goes on", async () => {
    const failing = editor("fail", "exit 1");
    const tmux = c.newTmux();
    const before = t.stack.sim.completions.length;
    const chat = await tmux.start(Tmux.cliLine(["chat"], failing.env));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "/edit draft");
    await tmux.waitFor(chat, (s) => s.includes("exited with status 1: nothing was sent"), "the editor's failure");
    expect(readFileSync(failing.seen, "utf8")).toContain("---\ndraft");
    await tmux.keys(chat, "C-g");
    await tmux.waitFor(chat, (s) => (s.match(/nothing was sent/g)?.length ?? 0) === 2, "the second failure");
    expect(t.stack.sim.completions.length).toBe(before);
  });

  it("run --edit sends the saved prompt; without a terminal it refuses in one line", async () => {
    const ed = editor("run", `printf 'in the editor\\n' >> "$2"`);
    t.stack.sim.enqueue({ content: "Done." });
    const tmux = c.newTmux();
    const pane = await tmux.start(Tmux.cliLine(["run", "--edit", "start", "here"], ed.env));
    await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "run to end", 30_000);
    expect(lastUser()).toBe("start here\nin the editor");

    const piped = await t.stack.cli(["run", "--edit", "x"], { env: { EDITOR: "true" } });
    expect(piped.code).toBe(2);
    expect(piped.stderr.trim().split("\n")[0]).toContain("--edit needs a terminal for the editor");
  });
});
