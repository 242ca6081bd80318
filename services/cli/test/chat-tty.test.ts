import { afterEach, describe, expect, it } from "vitest";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { useStack } from "../../../test/support/use-stack.js";
import { Tmux } from "./support/tmux.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * The interactive paths through a real pseudo-terminal (tmux): readline's
 * prompt, colour, a staged write approved from a second pane, and Ctrl-C.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))("boxmaker chat on a terminal", () => {
  let tmux: Tmux;
  const t = useStack("bxc-");
  afterEach(async () => {
    await tmux?.kill();
  });

  const env = () => ({
    BOXMAKER_SOCKET: t.stack.sockets.loopd,
    BOXMAKER_CHAT_HISTORY: join(t.dir, "chat_history"),
    NO_COLOR: undefined,
    FORCE_COLOR: undefined,
    TERM: "xterm-256color",
  });
  const userMessages = () =>
    (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages
      .filter((m) => m.role === "user")
      .map((m) => m.content);

  it("runs two turns, shows the framed write_file call, and resumes after an approval from a second pane", async () => {
    t.stack.sim.enqueue({
      toolCalls: [
        { id: "call-w1", name: "write_file", arguments: '{"path": "hello.txt", "content": "hello from the model\\n"}' },
      ],
    });
    t.stack.sim.enqueue({ content: "I wrote hello.txt for you." });
    t.stack.sim.enqueue({ content: "Second answer: the file is still there." });

    tmux = new Tmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "please write hello.txt");

    const staged = await tmux.waitFor(chat, (s) => /proposal p-\S+:/.test(s), "the staged decision");
    expect(staged).toMatch(/┌ write_file \{"path": "hello.txt", "content": "hello from the model\\n"\}/);
    expect(staged).toMatch(/│ staged for approval \(default:write\) — proposal p-\S+: run `boxmaker approve p-\S+`/);
    const proposalId = /proposal (p-[^\s:]+):/.exec(staged)![1]!;
    expect(existsSync(join(t.stack.workspace, "hello.txt"))).toBe(false);

    // A second terminal: approve shows the diff and asks before applying.
    const approver = await tmux.split(Tmux.cliLine(["approve", proposalId], env()));
    const question = await tmux.waitFor(approver, (s) => s.includes("[y/N]"), "the approval prompt");
    expect(question).toContain(`proposal ${proposalId} pending`);
    expect(question).toMatch(/^\+\+\+ b\/hello\.txt/m);
    expect(question).toMatch(/^\+hello from the model$/m);
    expect(question).toContain("Apply this write_file? [y/N]");
    await tmux.type(approver, "y");
    const approved = await tmux.waitFor(approver, (s) => s.includes("[exit "), "approve to exit");
    expect(approved).toMatch(/applied: Created hello\.txt/);
    expect(approved).toContain("[exit 0]");

    // The waiting turn resumed on its own: the tool result closes the frame, then the answer.
    const first = await tmux.waitFor(chat, (s) => /— stop · 2 requests/.test(s), "the first turn to end");
    // The chat pane had asked in place too; the decision from the other pane withdrew its question.
    expect(first).toContain("approve? [y]es · [n]o, reject · [d]iff in full · [l]ater");
    expect(first).toContain("(decided elsewhere: applied)");
    expect(first).toMatch(/│ Created hello\.txt[^\n]*\n└ ok/);
    expect(first).toContain("I wrote hello.txt for you.");
    expect(readFileSync(join(t.stack.workspace, "hello.txt"), "utf8")).toBe("hello from the model\n");

    await tmux.type(chat, "is it still there?");
    const second = await tmux.waitFor(chat, (s) => s.includes("— stop · 1 request "), "the second turn to end");
    expect(second).toContain("Second answer: the file is still there.");
    // Both turns went to one session: the second request replays the first turn.
    const msgs = (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
    expect(msgs.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "please write hello.txt",
      "is it still there?",
    ]);

    // On a terminal without NO_COLOR the frame is coloured.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a colour escape is what this checks for.
    expect(await tmux.screen(chat, true)).toMatch(/\x1b\[[0-9;]*m┌ /);

    await tmux.keys(chat, "C-d");
    expect(await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit")).toContain("[exit 0]");
  });

  it("asks in place in chat: d shows the whole diff, y applies it and the turn carries on", async () => {
    const content = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join("\\n");
    t.stack.sim.enqueue({
      toolCalls: [
        { id: "call-ip1", name: "write_file", arguments: `{"path": "inplace.txt", "content": "${content}\\n"}` },
      ],
    });
    t.stack.sim.enqueue({ content: "Wrote inplace.txt." });
    tmux = new Tmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "write inplace.txt");
    const asked = await tmux.waitFor(chat, (s) => s.includes("[l]ater"), "the in-place question");
    expect(asked).toMatch(/^\+line 1$/m);
    expect(asked).toMatch(/… \d+ more lines \(d shows them all\)/);
    expect(asked).not.toMatch(/^\+line 30$/m);
    await tmux.type(chat, "d");
    const full = await tmux.waitFor(chat, (s) => /^\+line 30$/m.test(s), "the full diff");
    expect(full.match(/\[l\]ater/g)?.length).toBe(2);
    await tmux.type(chat, "y");
    const done = await tmux.waitFor(chat, (s) => /— stop · 2 requests/.test(s), "the turn to end");
    expect(done).toMatch(/│ Created inplace\.txt/);
    expect(done).toContain("Wrote inplace.txt.");
    expect(done).not.toContain("decided elsewhere");
    expect(readFileSync(join(t.stack.workspace, "inplace.txt"), "utf8")).toContain("line 30\n");
    await tmux.keys(chat, "C-d");
    expect(await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit")).toContain("[exit 0]");
  });

  it("asks in place in run: n with a reason rejects, the model is told, and run exits 4", async () => {
    t.stack.sim.enqueue({
      toolCalls: [{ id: "call-ip2", name: "write_file", arguments: '{"path": "nope.txt", "content": "no\\n"}' }],
    });
    t.stack.sim.enqueue({ content: "Understood, I left it alone." });
    tmux = new Tmux();
    const pane = await tmux.start(Tmux.cliLine(["run", "write", "nope.txt"], env()));
    await tmux.waitFor(pane, (s) => s.includes("[l]ater"), "the in-place question");
    await tmux.type(pane, "n");
    await tmux.waitFor(pane, (s) => s.includes("reason for the model"), "the reason question");
    await tmux.type(pane, "use notes.txt instead");
    const done = await tmux.waitFor(pane, (s) => s.includes("[exit "), "run to exit");
    expect(done).toContain("the operator rejected this");
    expect(done).toContain("use notes.txt instead");
    expect(done).toContain("Understood, I left it alone.");
    expect(done).toContain("[exit 4]");
    expect(existsSync(join(t.stack.workspace, "nope.txt"))).toBe(false);
    const msgs = (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
    expect(msgs.find((m) => m.role === "tool")?.content).toContain("use notes.txt instead");
  });

  it('takes a paste and a """ block as one message each, and recalls messages from an earlier run', async () => {
    t.stack.sim.enqueue({ content: "Got the paste." });
    t.stack.sim.enqueue({ content: "Got the block." });
    tmux = new Tmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.paste(chat, "first pasted line\nsecond pasted line\nthird\n");
    await tmux.waitFor(chat, (s) => s.includes("Got the paste."), "the paste's answer");
    expect(userMessages()).toEqual(["first pasted line\nsecond pasted line\nthird"]);
    await tmux.type(chat, '"""');
    await tmux.type(chat, "block line one");
    await tmux.type(chat, "");
    await tmux.type(chat, "block line three");
    await tmux.type(chat, '"""');
    await tmux.waitFor(chat, (s) => s.includes("Got the block."), "the block's answer");
    expect(userMessages().at(-1)).toBe("block line one\n\nblock line three");
    await tmux.keys(chat, "C-d");
    await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");
    await tmux.kill();

    // A new chat: Up recalls the last message of the previous run.
    t.stack.sim.enqueue({ content: "Got it again." });
    tmux = new Tmux();
    const again = await tmux.start(Tmux.cliLine(["chat"], env()));
    await tmux.waitFor(again, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.keys(again, "Up");
    await tmux.waitFor(again, (s) => s.includes("› block line one ⏎  ⏎ block line three"), "the recalled message");
    await tmux.keys(again, "Enter");
    await tmux.waitFor(again, (s) => s.includes("Got it again."), "the recalled message's answer");
    expect(userMessages().at(-1)).toBe("block line one\n\nblock line three");
    await tmux.keys(again, "C-d");
  });

  it("slash commands run in the CLI and are never sent to the model", async () => {
    t.stack.sim.enqueue({ content: "Hello there." });
    tmux = new Tmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "/help");
    await tmux.waitFor(chat, (s) => s.includes("/proposals   what waits"), "the help");
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
    expect(userMessages()).toEqual(["hi"]);
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
    tmux = new Tmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "edit undo-me.txt");
    await tmux.waitFor(chat, (s) => s.includes("[l]ater"), "the in-place question");
    await tmux.type(chat, "y");
    const edited = await tmux.waitFor(chat, (s) => s.includes("Edited it."), "the edit");
    const id = /session (s-\S+)/.exec(edited)![1]!;
    expect(readFileSync(join(t.stack.workspace, "undo-me.txt"), "utf8")).toBe("model was here\n");

    const undoer = await tmux.split(Tmux.cliLine(["changes", id], env()));
    const listed = await tmux.waitFor(undoer, (s) => s.includes("[exit "), "changes to exit");
    expect(listed).toMatch(/c-\S+ {2}edit_file undo-me\.txt {2}applied/);
    expect(listed).toMatch(/^-keep this line$/m);
    expect(listed).toMatch(/^\+model was here$/m);
    const undo = await tmux.split(Tmux.cliLine(["undo", id], env()));
    const undone = await tmux.waitFor(undo, (s) => s.includes("[exit "), "undo to exit");
    expect(undone).toContain("restored  undo-me.txt: restored the content from before edit_file");
    expect(undone).toContain("[exit 0]");
    expect(readFileSync(join(t.stack.workspace, "undo-me.txt"), "utf8")).toBe("keep this line\n");

    await tmux.type(chat, "what happened?");
    await tmux.waitFor(chat, (s) => s.includes("I see it was undone."), "the next turn");
    expect(userMessages().at(-1)).toContain("The operator undid your change: edit_file of undo-me.txt (restored)");
    expect((await t.stack.cli(["undo", id])).stderr).toContain("no change left to undo");
    await tmux.keys(chat, "C-d");
  });

  it("boxmaker demo: the simulated model reads a file, proposes a fix, shows the diff, and applies it when approved", async () => {
    tmux = new Tmux();
    const demo = await tmux.start(Tmux.cliLine(["demo", "--sandbox", "none"], env()));
    const asked = await tmux.waitFor(demo, (s) => s.includes("[l]ater"), "the demo's approval question", 60_000);
    expect(asked).toContain("┌ read_file");
    expect(asked).toContain('Found it: line 2 says "Helo".');
    expect(asked).toMatch(/^-\s+return "Helo, " \+ name \+ "!"$/m);
    expect(asked).toMatch(/^\+\s+return "Hello, " \+ name \+ "!"$/m);
    await tmux.type(demo, "y");
    const done = await tmux.waitFor(demo, (s) => s.includes("[exit "), "the demo to end", 30_000);
    expect(done).toContain('Fixed: greeting.py now greets with "Hello, world!".');
    expect(done).toMatch(/greeting\.py now reads:\n\s+def greet\(name\):\n\s+return "Hello, " \+ name/);
    expect(done).toContain("[exit 0]");
  });

  it("first Ctrl-C cancels a slow turn and the session takes the next message", async () => {
    t.stack.sim.enqueue({ content: "slow ".repeat(400), tokenDelayMs: 40 });
    t.stack.sim.enqueue({ content: "Fresh answer after the cancel." });

    tmux = new Tmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "take your time");
    await tmux.waitFor(chat, (s) => s.includes("slow slow slow"), "the slow turn to stream");
    await tmux.keys(chat, "C-c");

    const cancelled = await tmux.waitFor(chat, (s) => s.includes("— cancelled"), "the turn to end cancelled");
    expect(cancelled).toContain("cancelling the turn (Ctrl-C again to quit)");
    expect(cancelled).not.toContain("[exit ");

    await tmux.type(chat, "still there?");
    const after = await tmux.waitFor(chat, (s) => s.includes("Fresh answer after the cancel."), "the next turn");
    expect(after).toMatch(/Fresh answer after the cancel\.\n— stop/);
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
    tmux = new Tmux();
    const pane = await tmux.start(Tmux.cliLine(["run", "list", "it"], { ...env(), NO_COLOR: "1" }));
    const screen = await tmux.waitFor(pane, (s) => s.includes("[exit "), "run to exit");
    expect(screen).toContain("┌ list_dir");
    expect(screen).toContain("[exit 0]");
    // biome-ignore lint/suspicious/noControlCharactersInRegex: an escape sequence is what this checks for.
    expect(await tmux.screen(pane, true)).not.toMatch(/\x1b\[/);
  });
});
