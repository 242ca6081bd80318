import { describe, expect, it } from "vitest";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * #26's custom commands, plan tool and streamed tool calls through a real
 * pseudo-terminal (tmux), against the whole stack and the llama simulator.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))(
  "boxmaker chat on a terminal: custom commands, the plan, streamed tool calls",
  () => {
    const c = useChatTty("bxd-");
    const t = c.t;
    let tmux: Tmux;
    const env = () => ({ ...c.env(), XDG_CONFIG_HOME: join(t.dir, "config") });

    it("sends a custom command's prompt with its arguments; /help lists operator and workspace commands with their origin", async () => {
      mkdirSync(join(t.dir, "config", "boxmaker", "commands"), { recursive: true });
      writeFileSync(
        join(t.dir, "config", "boxmaker", "commands", "standup.md"),
        "---\ndescription: what changed today\n---\nSummarise today's changes.\n",
      );
      mkdirSync(join(t.stack.workspace, ".boxmaker", "commands"), { recursive: true });
      writeFileSync(
        join(t.stack.workspace, ".boxmaker", "commands", "greet.md"),
        "---\ndescription: greet someone\narguments: name\n---\nSay hello to $name in $2 (all: $ARGUMENTS).\n",
      );
      t.stack.sim.enqueue({ content: "Hello, Ada!" });
      tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "/help");
      const help = await tmux.waitFor(chat, (s) => s.includes("/greet <name>"), "the custom commands in /help");
      expect(help).toMatch(/\/standup\s+what changed today\s+operator/);
      expect(help).toMatch(/\/greet <name>\s+greet someone\s+workspace/);
      expect(t.stack.sim.completions).toHaveLength(0);

      await tmux.type(chat, `/greet Ada "plain English"`);
      const answered = await tmux.waitFor(chat, (s) => s.includes("Hello, Ada!"), "the command's answer");
      expect(answered).toContain("/greet: the prompt of a workspace (");
      expect(answered).toContain("written in the workspace) command");
      expect(c.userMessages()).toEqual(['Say hello to Ada in plain English (all: Ada "plain English").']);

      await tmux.type(chat, "/nosuch thing");
      await tmux.waitFor(chat, (s) => s.includes("unknown command /nosuch; /help lists them"), "the unknown command");
      expect(t.stack.sim.completions).toHaveLength(1);
      await tmux.keys(chat, "C-d");
      await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");
    });

    it("shows the plan each time the model changes it, not as a tool frame, and show prints the last one", async () => {
      const plan = (items: [string, string][]) =>
        JSON.stringify({ items: items.map(([content, status]) => ({ content, status })) });
      t.stack.sim.enqueue({
        toolCalls: [
          {
            id: "pl1",
            name: "update_plan",
            arguments: plan([
              ["read the parser", "in_progress"],
              ["fix the off-by-one", "pending"],
            ]),
          },
        ],
      });
      t.stack.sim.enqueue({
        toolCalls: [
          {
            id: "pl2",
            name: "update_plan",
            arguments: plan([
              ["read the parser", "done"],
              ["fix the off-by-one", "in_progress"],
            ]),
          },
        ],
      });
      t.stack.sim.enqueue({ content: "Working on the fix." });
      tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "fix the parser");
      const done = await tmux.waitFor(chat, (s) => /— stop · 3 requests/.test(s), "the turn to end");
      expect(done).toMatch(/plan \(0\/2 done\)\n\s+▸ read the parser\n\s+○ fix the off-by-one/);
      expect(done).toMatch(/plan \(1\/2 done\)\n\s+✓ read the parser\n\s+▸ fix the off-by-one/);
      expect(done).not.toContain("┌ update_plan");
      expect(done).not.toContain("plan updated:");
      // The model got the ack as the tool result.
      const msgs = (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
      expect(msgs.filter((m) => m.role === "tool").map((m) => m.content)).toEqual([
        "plan updated: 2 items (0 done, 1 in progress, 1 pending)",
        "plan updated: 2 items (1 done, 1 in progress, 0 pending)",
      ]);
      const sessionId = /session (s-\S+)/.exec(done)![1]!;
      await tmux.keys(chat, "C-d");
      await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");

      const show = await tmux.split(Tmux.cliLine(["show", sessionId], env()));
      const shown = await tmux.waitFor(show, (s) => s.includes("[exit "), "show to exit");
      expect(shown).toMatch(/plan \(1\/2 done\)\n\s+✓ read the parser\n\s+▸ fix the off-by-one/);
      const exp = await tmux.split(Tmux.cliLine(["export", sessionId], env()));
      const exported = await tmux.waitFor(exp, (s) => s.includes("[exit "), "export to exit");
      expect(exported).toMatch(/## Plan\n\n- \[x\] read the parser\n- \[ \] fix the off-by-one \*\(in progress\)\*/);
    });

    it("names a tool call while the model is still writing it and shows its arguments growing, then the whole call", async () => {
      // Valid JSON padded with whitespace: a big call that still runs (read_file of a missing file).
      const args = `{"path":"notes.txt",${" ".repeat(900)}"start_line":1}`;
      // ~110 deltas of 8 bytes, 40 ms apart: about 4.5 s of a call being written.
      t.stack.sim.enqueue({
        toolCalls: [{ id: "rd1", name: "read_file", arguments: args }],
        argumentChunkSize: 8,
        tokenDelayMs: 40,
      });
      t.stack.sim.enqueue({ content: "No such file." });
      tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "read notes.txt");
      const sizes = new Set<string>();
      const growing = /┌ read_file writing… (\d+) bytes/;
      await tmux.waitFor(
        chat,
        (s) => {
          const m = growing.exec(s);
          if (m) sizes.add(m[1]!);
          return sizes.size >= 3 || s.includes("No such file.");
        },
        "the call's line growing",
        30_000,
      );
      const seen = [...sizes].map(Number);
      expect(seen.length).toBeGreaterThanOrEqual(3);
      // Growing, never past the call's size.
      expect([...seen].sort((a, b) => a - b)).toEqual(seen);
      expect(Math.max(...seen)).toBeLessThan(args.length);
      const done = await tmux.waitFor(chat, (s) => /— stop · 2 requests/.test(s), "the turn to end", 30_000);
      // The growing line was replaced by the whole call, in place: one frame, no leftover line.
      expect(done).not.toMatch(/writing…/);
      expect(done.match(/┌ read_file/g)).toHaveLength(1);
      expect(done).toContain(`┌ read_file {"path":"notes.txt", "start_line":1}`);
      expect(done).toMatch(/│ allowed/);
      await tmux.keys(chat, "C-d");
      await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit");
    });
  },
);
