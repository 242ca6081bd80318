import { describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * The interactive paths through a real pseudo-terminal (tmux): pasted and
 * block input, history, slash commands, undo, the demo, Ctrl-C and NO_COLOR.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))(
  "boxmaker chat on a terminal: input and control",
  () => {
    const c = useChatTty("bxc-");
    const t = c.t;
    let tmux: Tmux;

    it('takes a paste and a """ block as one message each, and recalls messages from an earlier run', async () => {
      t.stack.sim.enqueue({ content: "Got the paste." });
      t.stack.sim.enqueue({ content: "Got the block." });
      tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.paste(chat, "first pasted line\nsecond pasted line\nthird\n");
      await tmux.waitFor(chat, (s) => s.includes("Got the paste."), "the paste's answer");
      expect(c.userMessages()).toEqual(["first pasted line\nsecond pasted line\nthird"]);
      await tmux.type(chat, '"""');
      await tmux.type(chat, "block line one");
      await tmux.type(chat, "");
      await tmux.type(chat, "block line three");
      await tmux.type(chat, '"""');
      await tmux.waitFor(chat, (s) => s.includes("Got the block."), "the block's answer");
      expect(c.userMessages().at(-1)).toBe("block line one\n\nblock line three");
      await tmux.keys(chat, "C-d");
      await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");
      await tmux.kill();

      // A new chat: Up recalls the last message of the previous run.
      t.stack.sim.enqueue({ content: "Got it again." });
      tmux = c.newTmux();
      const again = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(again, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.keys(again, "Up");
      await tmux.waitFor(again, (s) => s.includes("› block line one ⏎  ⏎ block line three"), "the recalled message");
      await tmux.keys(again, "Enter");
      await tmux.waitFor(again, (s) => s.includes("Got it again."), "the recalled message's answer");
      expect(c.userMessages().at(-1)).toBe("block line one\n\nblock line three");
      await tmux.keys(again, "C-d");
    });

    it("slash commands run in the CLI and are never sent to the model", async () => {
      t.stack.sim.enqueue({ content: "Hello there." });
      tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "/help");
      await tmux.waitFor(chat, (s) => /\/proposals +what waits/.test(s), "the help");
      await tmux.type(chat, "/tools");
      await tmux.waitFor(chat, (s) => s.includes("write_file"), "the tools");
      await tmux.type(chat, "/status");
      await tmux.waitFor(chat, (s) => /loopd/.test(s) && /inferproxy/.test(s), "the status");
      await tmux.type(chat, "/frobnicate");
      await tmux.waitFor(
        chat,
        (s) => s.includes("unknown command /frobnicate; /help lists them (nothing was sent)"),
        "the unknown command",
      );
      const before = t.stack.sim.completions.length;
      await tmux.type(chat, "hi");
      await tmux.waitFor(chat, (s) => s.includes("Hello there."), "the answer");
      expect(t.stack.sim.completions.length).toBe(before + 1);
      expect(c.userMessages()).toEqual(["hi"]);
      await tmux.type(chat, "/proposals");
      await tmux.waitFor(chat, (s) => s.includes("nothing waits for a decision in this session"), "the proposals");
      await tmux.type(chat, "/cancel");
      await tmux.waitFor(chat, (s) => s.includes("no turn is running"), "the cancel");
      await tmux.type(chat, "/exit");
      expect(await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit")).toContain("[exit 0]");
    });

    it("undo restores an applied edit, changes shows it, and the model is told at its next turn", async () => {
      writeFileSync(join(t.stack.workspace, "undo-me.txt"), "keep this line\n");
      t.stack.sim.enqueue({
        toolCalls: [
          {
            id: "call-ed",
            name: "edit_file",
            arguments: '{"path": "undo-me.txt", "old_text": "keep this line", "new_text": "model was here"}',
          },
        ],
      });
      t.stack.sim.enqueue({ content: "Edited it." });
      t.stack.sim.enqueue({ content: "I see it was undone." });
      tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "edit undo-me.txt");
      await tmux.waitFor(chat, (s) => s.includes("[l]ater"), "the in-place question");
      await tmux.keys(chat, "y");
      const edited = await tmux.waitFor(chat, (s) => s.includes("Edited it."), "the edit");
      const id = /session (s-\S+)/.exec(edited)![1]!;
      expect(readFileSync(join(t.stack.workspace, "undo-me.txt"), "utf8")).toBe("model was here\n");

      const undoer = await tmux.split(Tmux.cliLine(["changes", id], c.env()));
      const listed = await tmux.waitFor(undoer, (s) => s.includes("[exit "), "changes to exit");
      expect(listed).toMatch(/c-\S+ {2}edit_file undo-me\.txt {2}applied/);
      expect(listed).toMatch(/^-keep this line$/m);
      expect(listed).toMatch(/^\+model was here$/m);
      const undo = await tmux.split(Tmux.cliLine(["undo", id], c.env()));
      const undone = await tmux.waitFor(undo, (s) => s.includes("[exit "), "undo to exit");
      expect(undone).toContain("restored  undo-me.txt: restored the content from before edit_file");
      expect(undone).toContain("[exit 0]");
      expect(readFileSync(join(t.stack.workspace, "undo-me.txt"), "utf8")).toBe("keep this line\n");

      await tmux.type(chat, "what happened?");
      await tmux.waitFor(chat, (s) => s.includes("I see it was undone."), "the next turn");
      expect(c.userMessages().at(-1)).toContain("The operator undid your change: edit_file of undo-me.txt (restored)");
      expect((await t.stack.cli(["undo", id])).stderr).toContain("no change left to undo");
      await tmux.keys(chat, "C-d");
    });

    it("boxmaker demo: the simulated model reads a file, proposes a fix, shows the diff, and applies it when approved", async () => {
      tmux = c.newTmux();
      const demo = await tmux.start(Tmux.cliLine(["demo", "--sandbox", "none"], c.env()));
      const asked = await tmux.waitFor(demo, (s) => s.includes("[l]ater"), "the demo's approval question", 60_000);
      expect(asked).toContain("┌ read_file");
      expect(asked).toContain('Found it: line 2 says "Helo".');
      expect(asked).toMatch(/^-\s+return "Helo, " \+ name \+ "!"$/m);
      expect(asked).toMatch(/^\+\s+return "Hello, " \+ name \+ "!"$/m);
      await tmux.keys(demo, "y");
      const done = await tmux.waitFor(demo, (s) => s.includes("[exit "), "the demo to end", 30_000);
      expect(done).toContain('Fixed: greeting.py now greets with "Hello, world!".');
      expect(done).toMatch(/greeting\.py now reads:\n\s+def greet\(name\):\n\s+return "Hello, " \+ name/);
      expect(done).toContain("[exit 0]");
    }, 120_000); // the demo boots its own stack: the waits above (60 s + 30 s) must fit, so a slow CI names what it waited for

    it("first Ctrl-C cancels a slow turn and the session takes the next message", async () => {
      t.stack.sim.enqueue({ content: "slow ".repeat(400), tokenDelayMs: 40 });
      t.stack.sim.enqueue({ content: "Fresh answer after the cancel." });

      tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "take your time");
      await tmux.waitFor(chat, (s) => s.includes("slow slow slow"), "the slow turn to stream");
      await tmux.keys(chat, "C-c");

      const cancelled = await tmux.waitFor(chat, (s) => s.includes("— cancelled"), "the turn to end cancelled");
      expect(cancelled).toContain("cancelling the turn (Ctrl-C again to quit)");
      expect(cancelled).not.toContain("[exit ");

      await tmux.type(chat, "still there?");
      // The answer and the turn's footer are separate writes: wait for the footer.
      const after = await tmux.waitFor(chat, (s) => /Fresh answer after the cancel\.\n— stop/.test(s), "the next turn");
      expect(after).not.toContain("[exit ");

      const id = JSON.parse((await t.stack.cli(["ls", "--json"])).stdout).sessions.find(
        (s: { title: string }) => s.title === "take your time",
      ).id;
      const shown = await t.stack.cli(["show", "--json", id]);
      const users = JSON.parse(shown.stdout).messages.filter(
        (m: { message: { role: string } }) => m.message.role === "user",
      );
      expect(users.map((m: { message: { content: string } }) => m.message.content)).toEqual([
        "take your time",
        "still there?",
      ]);
    });

    it("prints no escape sequences on a terminal when NO_COLOR is set", async () => {
      t.stack.sim.enqueue({
        reasoning: "hmm",
        toolCalls: [{ id: "c-ls", name: "list_dir", arguments: '{"path": "."}' }],
      });
      t.stack.sim.enqueue({ content: "Listed." });
      tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["run", "list", "it"], { ...c.env(), NO_COLOR: "1" }));
      const screen = await tmux.waitFor(pane, (s) => s.includes("[exit "), "run to exit");
      expect(screen).toContain("┌ list_dir");
      expect(screen).toContain("[exit 0]");
      // biome-ignore lint/suspicious/noControlCharactersInRegex: an escape sequence is what this checks for.
      expect(await tmux.screen(pane, true)).not.toMatch(/\x1b\[/);
    });
  },
);
