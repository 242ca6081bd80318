// Getting back to work: `run -c`, `run --session ID`, `chat -c` continue a session instead of starting one.
import { describe, expect, it } from "vitest";
import { useStack } from "../../../test/support/use-stack.js";
import { events } from "./support/cli-process.js";

describe("continuing a session", () => {
  const t = useStack("bxcs-");

  it("run -c continues the last main session, run --session a named one (by prefix), chat -c resumes it", async () => {
    const none = await t.stack.cli(["run", "-c", "anything"]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("no session to continue: `boxmaker chat` or `boxmaker run PROMPT` starts one");

    t.stack.sim.enqueue({ content: "First." });
    const first = events((await t.stack.cli(["run", "--json", "remember the word plum"])).stdout)[0]!
      .session_id as string;
    t.stack.sim.enqueue({ content: "Second." });
    const second = events((await t.stack.cli(["run", "--json", "an unrelated task"])).stdout)[0]!.session_id as string;

    t.stack.sim.enqueue({ content: "Continued." });
    const c = await t.stack.cli(["run", "-c", "and what was the word?"]);
    expect(c.code, c.stderr).toBe(0);
    expect(c.stderr).toContain(`session ${second} (continued: an unrelated task, 2 messages)`);
    expect(c.stdout).toContain("Continued.");
    // The model got the whole conversation: the earlier turn, then the new message.
    const body = t.stack.sim.completions.at(-1)!.body as { messages: { content: string }[] };
    const sent = body.messages.map((m) => m.content);
    expect(sent).toEqual(expect.arrayContaining(["an unrelated task", "Second.", "and what was the word?"]));

    t.stack.sim.enqueue({ content: "Plum." });
    const named = await t.stack.cli(["run", "--session", first.slice(0, -3), "and the word?"]);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stderr).toContain(`session ${first} (continued: remember the word plum, 2 messages)`);
    const shown = (await t.stack.cli(["show", first])).stdout;
    expect(shown).toContain("and the word?");
    expect(shown).toContain("Plum.");
    expect((await t.stack.cli(["show", second])).stdout).not.toContain("and the word?");

    // chat -c resumes the most recently active one: `first`, just used.
    t.stack.sim.enqueue({ content: "Chatted." });
    const chat = await t.stack.cli(["chat", "-c", "--json"], { input: "one more\n" });
    expect(chat.code, chat.stderr).toBe(0);
    expect(chat.stderr).toContain(`resuming session ${first}`);
    expect(events(chat.stdout).every((e) => e.session_id === first)).toBe(true);

    const both = await t.stack.cli(["run", "-c", "--session", first, "x"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("--session and --continue both name the session");
  });
});
