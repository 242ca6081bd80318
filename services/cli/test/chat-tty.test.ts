import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * The interactive paths through a real pseudo-terminal (tmux): readline's
 * prompt, colour, and staged writes approved from a second pane or in place.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))("boxmaker chat on a terminal", () => {
  const c = useChatTty("bxc-");
  const t = c.t;
  let tmux: Tmux;

  it("runs two turns, shows the framed write_file call, and resumes after an approval from a second pane", async () => {
    t.stack.sim.enqueue({
      toolCalls: [
        { id: "call-w1", name: "write_file", arguments: '{"path": "hello.txt", "content": "hello from the model\\n"}' },
      ],
    });
    t.stack.sim.enqueue({ content: "I wrote hello.txt for you." });
    t.stack.sim.enqueue({ content: "Second answer: the file is still there." });

    tmux = c.newTmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "please write hello.txt");

    const staged = await tmux.waitFor(chat, (s) => /proposal p-\S+:/.test(s), "the staged decision");
    expect(staged).toMatch(/┌ write_file \{"path": "hello.txt", "content": "hello from the model\\n"\}/);
    expect(staged).toMatch(/│ staged for approval \(default:write\) — proposal p-\S+: run `boxmaker approve p-\S+`/);
    const proposalId = /proposal (p-[^\s:]+):/.exec(staged)![1]!;
    expect(existsSync(join(t.stack.workspace, "hello.txt"))).toBe(false);

    // A second terminal: approve shows the diff and asks before applying.
    const approver = await tmux.split(Tmux.cliLine(["approve", proposalId], c.env()));
    const question = await tmux.waitFor(approver, (s) => s.includes("[l]ater"), "the approval prompt");
    expect(question).toContain(`proposal ${proposalId} pending`);
    expect(question).toMatch(/^\+\+\+ b\/hello\.txt/m);
    expect(question).toMatch(/^\+hello from the model$/m);
    expect(question).toContain("Apply this write_file? [y]es, apply · [n]o, reject · [l]ater");
    await tmux.keys(approver, "y");
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
    tmux = c.newTmux();
    const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "write inplace.txt");
    const asked = await tmux.waitFor(chat, (s) => s.includes("[l]ater"), "the in-place question");
    expect(asked).toMatch(/^\+line 1$/m);
    expect(asked).toMatch(/… \d+ more lines \(d shows them all\)/);
    expect(asked).not.toMatch(/^\+line 30$/m);
    await tmux.keys(chat, "d");
    // The whole diff, then the question again below it (two writes: wait for both).
    const full = await tmux.waitFor(
      chat,
      (s) => /^\+line 30$/m.test(s) && (s.match(/\[l\]ater/g)?.length ?? 0) >= 2,
      "the full diff and the question again",
    );
    expect(full.match(/\[l\]ater/g)?.length).toBe(2);
    expect(full.lastIndexOf("[l]ater")).toBeGreaterThan(full.indexOf("+line 30"));
    await tmux.keys(chat, "y");
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
    tmux = c.newTmux();
    const pane = await tmux.start(Tmux.cliLine(["run", "write", "nope.txt"], c.env()));
    await tmux.waitFor(pane, (s) => s.includes("[l]ater"), "the in-place question");
    await tmux.keys(pane, "n");
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
});
