import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { countTokens, renderPrompt, type ChatMessage } from "@boxmaker/llama-sim";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { doneOf, turn } from "../../../test/support/loop-client.js";
import { requires } from "../../../test/support/requirements.js";

interface ShownMessage {
  interrupted?: boolean;
  message: { role: string; content: string; reasoning_content?: string };
}

/**
 * Ctrl-C in `boxmaker run` on a real terminal (tmux): what the person saw
 * stays in the session, and a proposal the cancelled turn waited on can no
 * longer be applied.
 */
describe.skipIf(!requires("Ctrl-C on a terminal (pty tests)", ["tmux"]))("Ctrl-C keeps what was shown", () => {
  const c = useChatTty("bxk-");
  const t = c.t;

  it("mid-answer: the partial answer is kept marked interrupted, counted, and the next request reuses its cache", async () => {
    t.stack.sim.enqueue({ reasoning: "Plan the story.", content: "once ".repeat(400), tokenDelayMs: 30 });
    const tmux = c.newTmux();
    const run = await tmux.start(Tmux.cliLine(["run", "tell a long story"], c.env()));
    await tmux.waitFor(run, (s) => s.includes("once once once once once"), "the answer to stream");
    await tmux.keys(run, "C-c");
    const done = await tmux.waitFor(run, (s) => s.includes("[exit "), "run to exit", 30_000);
    expect(done).toContain("cancelling the turn (Ctrl-C again to quit)");
    expect(done).toContain("[exit 5]");
    // The request ran: the closing line counts it, its prompt and what it generated.
    const closing = /— cancelled · (\d+) requests? · (\d+) prompt tokens \(\d+% cached\) · (\d+) generated/.exec(done);
    expect(closing, done).not.toBeNull();
    const [, requests, promptTokens, generated] = closing!.map(Number);
    const first = t.stack.sim.completions.at(-1)!;
    expect(first.outcome).toBe("aborted");
    expect(requests).toBe(1);
    expect(promptTokens).toBe(first.promptTokens);
    const id = /session (s-\S+)/.exec(done)![1]!;

    // `show` has the answer as far as it got, marked; the person saw at least that much.
    const shown = JSON.parse((await t.stack.cli(["show", "--json", id])).stdout) as { messages: ShownMessage[] };
    expect(shown.messages.map((m) => m.message.role)).toEqual(["user", "assistant"]);
    const kept = shown.messages[1]!;
    expect(kept.interrupted).toBe(true);
    expect(kept.message.reasoning_content).toBe("Plan the story.");
    expect(kept.message.content).toMatch(/^once( once)* ?$/);
    expect(first.output!.content.startsWith(kept.message.content)).toBe(true);
    // Exactly what the terminal showed (words that arrived after the cancel line included).
    const words = (text: string) => text.match(/\bonce\b/g)?.length ?? 0;
    expect(words(done)).toBe(words(kept.message.content));
    expect(generated).toBeGreaterThanOrEqual(kept.message.content.split("once").length - 1);
    expect((await t.stack.cli(["show", id])).stdout).toMatch(/assistant \d\d:\d\d \(interrupted\)/);

    // The next turn's request is the cancelled one's, then the partial answer byte for byte, then the new message.
    t.stack.sim.enqueue({ content: "The end." });
    expect(doneOf(await turn(t.client, id, "finish it")).finishReason).toBe("stop");
    const second = t.stack.sim.completions.at(-1)!;
    const prev = (first.body as { messages: ChatMessage[]; tools: unknown[] }).messages;
    const cur = (second.body as { messages: ChatMessage[] }).messages;
    expect(cur.slice(0, prev.length)).toEqual(prev);
    expect(cur[prev.length]).toEqual({
      role: "assistant",
      content: kept.message.content,
      reasoning_content: "Plan the story.",
    });
    expect(second.rawBody).toContain(JSON.stringify(kept.message));
    expect(cur.slice(prev.length + 1)).toEqual([{ role: "user", content: "finish it" }]);
    // The slot held the prompt and what was generated: all of it is reused (bar the closing
    // tokens when the server generated a token or two more than reached loopd).
    const tools = (first.body as { tools: unknown[] }).tools;
    const held = countTokens(renderPrompt([...prev, cur[prev.length]!], tools, { addGenerationPrompt: false }).text);
    expect(held).toBeGreaterThan(first.promptTokens! + 5);
    expect(second.cacheN).toBeGreaterThanOrEqual(held - 3);
  });

  it("at the approval question: the first Ctrl-C cancels the turn at once and withdraws the proposal; approve refuses it in one line", async () => {
    t.stack.sim.enqueue({
      toolCalls: [{ id: "w1", name: "write_file", arguments: '{"path": "never.txt", "content": "no\\n"}' }],
    });
    const tmux = c.newTmux();
    const run = await tmux.start(Tmux.cliLine(["run", "write never.txt"], c.env()));
    await tmux.waitFor(run, (s) => s.includes("Ctrl-C cancels the turn"), "the approval question");
    await tmux.keys(run, "C-c");
    // Not after approval_wait_ms (10 minutes): now.
    const done = await tmux.waitFor(run, (s) => s.includes("[exit "), "run to exit", 20_000);
    expect(done).toContain("cancelling the turn (Ctrl-C again to quit)");
    expect(done).toMatch(/is withdrawn, nothing was applied/);
    expect(done).toMatch(/— cancelled · 1 request/);
    expect(done).not.toContain("left pending");
    expect(done).toContain("[exit 5]");

    const id = /session (s-\S+)/.exec(done)![1]!;
    const { proposals } = await t.client.listProposals({ sessionId: id, includeDecided: true });
    expect(proposals.map((p) => p.state)).toEqual(["withdrawn"]);
    const pid = proposals[0]!.id;
    const shown = JSON.parse((await t.stack.cli(["show", "--json", id])).stdout) as { messages: ShownMessage[] };
    expect(shown.messages.at(-1)!.message).toMatchObject({ role: "tool" });
    expect(shown.messages.at(-1)!.message.content).toContain(`proposal ${pid} was withdrawn and nothing was applied`);

    const approve = await t.stack.cli(["approve", "--yes", pid]);
    expect(approve.code).toBe(1);
    expect(approve.stdout).toBe("");
    expect(approve.stderr).toBe(
      `proposal ${pid} was withdrawn when the turn that staged it was cancelled; it cannot be approved — ask the model to stage it again\n`,
    );
    // Nor through the RPC, whatever the client.
    await expect(t.client.decideProposal({ id: pid, approve: true })).rejects.toThrow(/was withdrawn/);
    expect(existsSync(join(t.stack.workspace, "never.txt"))).toBe(false);
  });
});
