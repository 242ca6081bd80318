import { describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { until } from "./support/cli-process.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * #32's live status line and the reasoning key, through a real
 * pseudo-terminal (tmux) against the whole stack and the llama simulator.
 * What the pane received is recorded byte for byte (pipe-pane) as well as
 * its screen, so a line drawn and erased in between is still seen.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))(
  "boxmaker chat and run on a terminal: the live status line",
  () => {
    const c = useChatTty("bxl-");
    const t = c.t;
    // 60 reasoning deltas 80 ms apart: the model thinks for about 5 s before it answers.
    const thinking = Array.from({ length: 60 }, (_, i) => `step${i + 1} `);
    const slowThought = { reasoning: thinking, content: "The answer is 42.", tokenDelayMs: 80 };
    const statusLine = /thinking · \d+ s · \d+ tok( · [\d.]+ tok\/s)? · cache [\d,]+\/[\d,]+ · slot \d+/;

    /** The bytes the pane has received so far. */
    const recorded = (file: string) => {
      try {
        return readFileSync(file, "utf8");
      } catch {
        return "";
      }
    };

    it("says what the turn does while the model thinks (slot, cache), and leaves only the answer and summary", async () => {
      t.stack.sim.enqueue(slowThought);
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      const bytes = join(t.dir, "chat-pane.bytes");
      await tmux.command("pipe-pane", "-t", chat, `cat >> '${bytes}'`);
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      expect(await tmux.screen(chat)).toContain("Ctrl-T shows/hides reasoning");
      await tmux.type(chat, "what is the answer?");
      const during = await tmux.waitFor(chat, (s) => statusLine.test(s), "the status line while the model thinks");
      // Before any answer text, with the key that shows the reasoning.
      expect(during).not.toContain("The answer is 42.");
      expect(during).toContain("Ctrl-T shows reasoning");
      expect(during).not.toContain("step1 ");
      const done = await tmux.waitFor(chat, (s) => /— stop · 1 request/.test(s), "the turn to end", 30_000);
      // The line is gone: the answer, the thinking summary and the closing summary stand as without it.
      expect(done).not.toMatch(/thinking · \d+ s/);
      expect(done).not.toMatch(/tok\/s|cache [\d,]+\/[\d,]+/);
      expect(done).toContain("The answer is 42.");
      expect(done).toMatch(/\(thought for 60 tokens; Ctrl-T or --reasoning shows it\)/);
      const lines = done.split("\n");
      const answer = lines.findIndex((l) => l.includes("The answer is 42."));
      expect(lines[answer]).toBe("The answer is 42.");
      expect(lines[answer + 1]).toMatch(/^— stop · 1 request · \d+ prompt tokens/);
      // Each drawing of the line started with a carriage return and erase-line, and the line
      // was erased (not overwritten by text) before the answer was written.
      await until(() => recorded(bytes).includes("— stop"), "the pane's bytes to reach the summary");
      const raw = recorded(bytes);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the line's own escapes are what this finds.
      const drawn = [...raw.matchAll(/thinking · \d+ s[^\x1b]*\x1b\[22m/g)];
      expect(drawn.length).toBeGreaterThan(0);
      for (const m of drawn) expect(raw.slice(0, m.index).endsWith("\r\x1b[2K\x1b[2m")).toBe(true);
      const last = drawn.at(-1)!;
      const rest = raw.slice(last.index + last[0].length);
      expect(rest.startsWith("\r\x1b[2K")).toBe(true);
      expect(rest).toContain("The answer is 42.");

      // The next turn's prompt starts with the whole first one: the line shows the server reusing it.
      t.stack.sim.enqueue(slowThought);
      await tmux.type(chat, "and again?");
      const reused = /thinking · .* cache ([\d,]+)\/([\d,]+) · slot \d+/;
      const second = await tmux.waitFor(chat, (s) => reused.test(s), "the second turn's status line");
      const [, hit, total] = reused.exec(second)!.map((x) => Number(x.replaceAll(",", "")));
      expect(hit).toBeGreaterThan(0);
      expect(hit).toBeLessThan(total!);
      const summary = await tmux.waitFor(chat, (s) => (s.match(/— stop · 1 request/g)?.length ?? 0) === 2, "the turn");
      expect(summary).toMatch(/— stop · 1 request · \d+ prompt tokens \([1-9]\d*% cached\)/);
      await tmux.keys(chat, "C-d");
      await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");
    });

    it("Ctrl-T shows the reasoning that was hidden, from its start, while it streams", async () => {
      t.stack.sim.enqueue(slowThought);
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "think it through");
      await tmux.waitFor(chat, (s) => statusLine.test(s), "the status line while the model thinks");
      await tmux.keys(chat, "C-t");
      const shown = await tmux.waitFor(chat, (s) => s.includes("step1 step2"), "the hidden reasoning shown");
      expect(shown).toContain("thinking:");
      expect(shown).not.toContain("The answer is 42.");
      const done = await tmux.waitFor(chat, (s) => /— stop · 1 request/.test(s), "the turn to end", 30_000);
      expect(done).toContain("step60");
      expect(done).not.toContain("thought for 60 tokens");
      expect(done).toContain("The answer is 42.");
      // The key is not typed into the next prompt, and the chat goes on.
      t.stack.sim.enqueue({ content: "Second answer." });
      await tmux.type(chat, "again");
      await tmux.waitFor(chat, (s) => s.includes("Second answer."), "the next turn");
      expect(c.userMessages().at(-1)).toBe("again");
      await tmux.keys(chat, "C-d");
      await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");
    });

    it("keeps out of an approval question's way, and Ctrl-T works again once it is answered", async () => {
      t.stack.sim.enqueue({
        toolCalls: [{ id: "call-ll1", name: "write_file", arguments: `{"path": "ll.txt", "content": "hi\\n"}` }],
      });
      t.stack.sim.enqueue(slowThought);
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      const bytes = join(t.dir, "ask-pane.bytes");
      await tmux.command("pipe-pane", "-t", chat, `cat >> '${bytes}'`);
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "write ll.txt");
      await tmux.waitFor(chat, (s) => s.includes("[l]ater"), "the in-place question");
      // Long enough for the line's one-second clock to have drawn it, were it to.
      await new Promise((r) => setTimeout(r, 1500));
      const atQuestion = recorded(bytes);
      expect(atQuestion.slice(atQuestion.indexOf("approve?"))).not.toMatch(/waiting for|· slot \d/);
      expect((await tmux.screen(chat)).trimEnd().split("\n").at(-1)).toMatch(/\[l\]ater ·? ?Ctrl-C cancels the turn$/);
      await tmux.keys(chat, "y");
      await tmux.waitFor(chat, (s) => statusLine.test(s), "the status line again, while the model thinks");
      await tmux.keys(chat, "C-t");
      await tmux.waitFor(chat, (s) => s.includes("step1 step2"), "the hidden reasoning shown");
      const done = await tmux.waitFor(chat, (s) => /— stop · 2 requests/.test(s), "the turn to end", 30_000);
      expect(done).toContain("The answer is 42.");
      expect(readFileSync(join(t.stack.workspace, "ll.txt"), "utf8")).toBe("hi\n");
      await tmux.keys(chat, "C-d");
      await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");
    });

    it("shows llama-server reading a long prompt, batch by batch, with what it took from its cache", async () => {
      t.stack.sim.enqueue({ content: "Read it all.", prefillMsPerBatch: 1500 });
      const tmux = c.newTmux();
      const prompt = join(t.dir, "long-prompt.txt");
      writeFileSync(prompt, Array.from({ length: 3000 }, (_, i) => `word${i}`).join(" "));
      const pane = await tmux.start(
        Tmux.cliLine(["run", "-"], c.env()).replace('; echo "[exit $?]"', ` < '${prompt}'; echo "[exit $?]"`),
      );
      const reading = /reading the prompt ([\d,]+)\/([\d,]+) · \d+ s · cache [\d,]+\/[\d,]+ · slot \d+/;
      const during = await tmux.waitFor(pane, (s) => reading.test(s), "the prefill's progress", 30_000);
      const [, processed, total] = reading.exec(during)!.map((x) => Number(x.replaceAll(",", "")));
      expect(total).toBeGreaterThan(2048);
      expect(processed).toBeLessThanOrEqual(total!);
      const end = await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "run to end", 30_000);
      expect(end).not.toContain("reading the prompt");
      expect(end).toContain("Read it all.");
    });

    it("run: a status line on a terminal; none, and no control sequence, when its output goes to a file or TERM=dumb", async () => {
      const tmux = c.newTmux();
      const out = join(t.dir, "run.out");
      t.stack.sim.enqueue(slowThought);
      // The terminal is still the pane's (stderr, stdin): only stdout is a file.
      const line = Tmux.cliLine(["run", "what is the answer?"], c.env()).replace(
        '; echo "[exit $?]"',
        ` > '${out}'; echo "[exit $?]"`,
      );
      const pane = await tmux.start(line);
      const bytes = join(t.dir, "run-pane.bytes");
      await tmux.command("pipe-pane", "-t", pane, `cat >> '${bytes}'`);
      await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "run to end", 30_000);
      const file = readFileSync(out, "utf8");
      expect(file).toContain("The answer is 42.");
      expect(file).toMatch(/— stop · 1 request/);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this looks for.
      expect(file).not.toMatch(/[\x00-\x09\x0b-\x1f]/);
      expect(file).not.toMatch(/tok\/s|thinking ·|cache [\d,]+\/[\d,]+/);
      expect(recorded(bytes)).not.toMatch(/thinking ·/);

      // TERM=dumb on a terminal: nothing redrawn either.
      t.stack.sim.enqueue(slowThought);
      const dumb = await tmux.split(Tmux.cliLine(["run", "again"], { ...c.env(), TERM: "dumb" }));
      const dumbBytes = join(t.dir, "dumb-pane.bytes");
      await tmux.command("pipe-pane", "-t", dumb, `cat >> '${dumbBytes}'`);
      await tmux.waitFor(dumb, (s) => s.includes("[exit 0]"), "run with TERM=dumb to end", 30_000);
      expect(await tmux.screen(dumb)).toContain("The answer is 42.");
      expect(recorded(dumbBytes)).not.toContain("thinking ·");
      expect(recorded(dumbBytes)).not.toContain("\x1b[2K");

      // And on a terminal, run has the line too.
      t.stack.sim.enqueue(slowThought);
      const tty = await tmux.split(Tmux.cliLine(["run", "once more"], c.env()));
      await tmux.waitFor(tty, (s) => statusLine.test(s), "run's status line");
      const end = await tmux.waitFor(tty, (s) => s.includes("[exit 0]"), "run on a terminal to end", 30_000);
      expect(end).not.toMatch(/thinking · \d+ s/);
      expect(end).toContain("The answer is 42.");
    });

    it("attach --follow: the line during each turn of the session it watches, and none between turns", async () => {
      const id = (await t.client.createSession({ title: "watched" })).id;
      const tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["attach", "--follow", id], c.env()));
      const bytes = join(t.dir, "attach-pane.bytes");
      await tmux.command("pipe-pane", "-t", pane, `cat >> '${bytes}'`);
      // Idle: nothing to say, so no line, even after a while.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(await tmux.screen(pane)).not.toMatch(/waiting for the model|thinking ·/);
      for (const text of ["first", "second"]) {
        t.stack.sim.enqueue(slowThought);
        const turn = (async () => {
          for await (const _ of t.client.send({ sessionId: id, text }));
        })();
        await tmux.waitFor(pane, (s) => statusLine.test(s), `the line during the ${text} turn`);
        await turn;
        await tmux.waitFor(
          pane,
          (s) => (s.match(/— stop · 1 request/g)?.length ?? 0) === (text === "first" ? 1 : 2),
          "the turn's end",
        );
        await new Promise((r) => setTimeout(r, 700));
        expect(await tmux.screen(pane)).not.toMatch(/thinking · \d+ s|waiting for the model/);
      }
      await tmux.keys(pane, "C-c");
      await tmux.waitFor(pane, (s) => s.includes("[exit "), "attach to end");
    });
  },
);
