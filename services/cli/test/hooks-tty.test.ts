import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/stack.js";
import { requires } from "../../../test/support/requirements.js";
import { useChatTty } from "./support/chat-tty.js";
import { Tmux } from "./support/tmux.js";

/**
 * A "linter" that needs nothing installed: every line ending in whitespace in
 * the workspace's Python files, and exit 1 when there is one.
 */
const LINT = `out=$(grep -Hn '[[:space:]]$' *.py); [ -z "$out" ] || { echo "lint: trailing whitespace"; echo "$out"; exit 1; }`;

type Msg = { role: string; content: string; tool_call_id?: string };

/**
 * The lint-after-edit loop on a real terminal: the model writes a file, a
 * person approves in place (the terminal's bell and a desktop notification say
 * that it waits), the post_tool hook's findings reach the model as a note on
 * that tool result, and the model's fix comes back clean.
 */
describe.skipIf(!requires("boxmaker chat on a terminal with hooks (pty tests)", ["tmux"]))("hooks in chat", () => {
  const c = useChatTty("bxk-", {
    brokerd: {
      policy: { rules: [{ tool: "edit_file", effect: "allow" }] },
      hooks: { post_tool: [{ name: "lint", match: ["write_file", "edit_file"], command: LINT }] },
    },
  });
  const t = c.t;

  /** Every byte the pane's program writes, bells included (capture-pane shows none). */
  const rawOf = async (tmux: Tmux, pane: string, name: string) => {
    const file = join(t.dir, `${name}.raw`);
    await tmux.command("pipe-pane", "-o", "-t", pane, `cat >> '${file}'`);
    return () => (existsSync(file) ? readFileSync(file, "latin1") : "");
  };

  it("post_tool lint output is in the model's next request as a note on that tool result; the wait rang the bell", async () => {
    t.stack.sim.enqueue({
      toolCalls: [
        { id: "call-w", name: "write_file", arguments: '{"path": "app.py", "content": "x = 1   \\nprint(x)\\n"}' },
      ],
    });
    t.stack.sim.enqueue({
      toolCalls: [
        {
          id: "call-e",
          name: "edit_file",
          arguments: '{"path": "app.py", "old_text": "x = 1   ", "new_text": "x = 1"}',
        },
      ],
    });
    t.stack.sim.enqueue({ content: "Lint is clean now." });

    // A notify-send of our own on PATH, and a display, so the desktop notification is sent and seen.
    const bin = join(t.dir, "bin");
    mkdirSync(bin, { recursive: true });
    const notified = join(t.dir, "notified.txt");
    writeFileSync(join(bin, "notify-send"), `#!/bin/sh\nprintf '%s\\n' "$@" >> '${notified}'\n`);
    chmodSync(join(bin, "notify-send"), 0o755);

    const tmux = c.newTmux();
    const chat = await tmux.start(
      Tmux.cliLine(["chat"], {
        ...c.env(),
        PATH: `${bin}:${process.env.PATH}`,
        DISPLAY: ":99",
        BOXMAKER_NOTIFY: undefined,
      }),
    );
    const raw = await rawOf(tmux, chat, "chat");
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "write app.py");

    await tmux.waitFor(chat, (s) => s.includes("approve? [y]es"), "the in-place question");
    await waitFor(() => raw().includes("\x07"), 15_000, "the bell on the pty");
    await waitFor(() => existsSync(notified), 15_000, "the desktop notification");
    const args = readFileSync(notified, "utf8").split("\n");
    expect(args.slice(0, 3)).toEqual(["--app-name=boxmaker", "--", "boxmaker: approval waiting"]);
    expect(args[3]).toMatch(/^write_file · proposal p-\S+ · session s-\S+$/);
    await tmux.keys(chat, "y");

    const done = await tmux.waitFor(chat, (s) => s.includes("Lint is clean now."), "the turn to end");
    // The person sees the note in the tool result's frame too.
    expect(done).toContain('│ [post_tool hook "lint" exited 1]');
    expect(done).toContain("│ lint: trailing whitespace");

    // What the model got: the request after the write carries the lint findings on that tool's result…
    const requests = t.stack.sim.completions.slice(-3).map((r) => (r.body as { messages: Msg[] }).messages);
    const afterWrite = requests[1]!.filter((m) => m.role === "tool").at(-1)!;
    expect(afterWrite.tool_call_id).toBe("call-w");
    expect(afterWrite.content).toMatch(/^Created app\.py/);
    expect(afterWrite.content).toContain(
      '[post_tool hook "lint" exited 1]\nlint: trailing whitespace\napp.py:1:x = 1   ',
    );
    // …and the fix's result has no note: the hook printed nothing and exited 0.
    const afterEdit = requests[2]!.filter((m) => m.role === "tool").at(-1)!;
    expect(afterEdit.tool_call_id).toBe("call-e");
    expect(afterEdit.content).not.toContain("post_tool hook");
    expect(readFileSync(join(t.stack.workspace, "app.py"), "utf8")).toBe("x = 1\nprint(x)\n");
  });

  it("BOXMAKER_NOTIFY=off: the question is asked without a bell or a notification", async () => {
    t.stack.sim.enqueue({
      toolCalls: [{ id: "call-q", name: "write_file", arguments: '{"path": "q.txt", "content": "q\\n"}' }],
    });
    t.stack.sim.enqueue({ content: "Left it pending." });
    const bin = join(t.dir, "bin2");
    mkdirSync(bin, { recursive: true });
    const notified = join(t.dir, "notified2.txt");
    writeFileSync(join(bin, "notify-send"), `#!/bin/sh\necho called >> '${notified}'\n`);
    chmodSync(join(bin, "notify-send"), 0o755);
    const tmux = c.newTmux();
    const chat = await tmux.start(
      Tmux.cliLine(["chat"], {
        ...c.env(),
        PATH: `${bin}:${process.env.PATH}`,
        DISPLAY: ":99",
        BOXMAKER_NOTIFY: "off",
      }),
    );
    const raw = await rawOf(tmux, chat, "quiet");
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "write q.txt");
    await tmux.waitFor(chat, (s) => s.includes("approve? [y]es"), "the in-place question");
    // The bell would come before the question; the question's bytes having arrived, so would it.
    await waitFor(() => raw().includes("approve?"), 15_000, "the question in the raw bytes");
    expect(raw()).not.toContain("\x07");
    await tmux.keys(chat, "n");
    await tmux.waitFor(chat, (s) => s.includes("reason for the model"), "the reason question");
    await tmux.type(chat, "not now");
    await tmux.waitFor(chat, (s) => s.includes("Left it pending."), "the turn to end");
    expect(existsSync(notified)).toBe(false);
  });
});
