import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { useChatTty } from "./support/chat-tty.js";
import { Tmux } from "./support/tmux.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * #32: approvals answered with one key, no Enter, and each key meaning the
 * same at every question: `n` rejects in a turn and at `boxmaker approve`.
 * Through a real terminal (tmux) against the whole stack.
 */
describe.skipIf(!requires("boxmaker on a terminal (pty tests)", ["tmux"]))(
  "approval questions: one key, one meaning",
  () => {
    const c = useChatTty("bxak-");
    const t = c.t;
    const write = (id: string, path: string) => ({
      id,
      name: "write_file",
      arguments: JSON.stringify({ path, content: `${path}\n` }),
    });

    it("a key answers without Enter, and the Enter typed after it by habit answers nothing", async () => {
      t.stack.sim.enqueue({ toolCalls: [write("call-k1", "one.txt"), write("call-k2", "two.txt")] });
      t.stack.sim.enqueue({ content: "Wrote one, not two." });
      const tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["run", "write two files"], c.env()));
      await tmux.waitFor(pane, (s) => s.includes("one.txt") && s.includes("[l]ater"), "the first question");
      // `y` then Enter, as a person used to [y/N] types it.
      await tmux.type(pane, "y");
      const second = await tmux.waitFor(
        pane,
        (s) => s.includes("two.txt") && (s.match(/\[l\]ater/g)?.length ?? 0) === 2,
        "the second question",
      );
      expect(second).toMatch(/\[l\]ater · Ctrl-C cancels the turn yes$/m);
      expect(existsSync(join(t.stack.workspace, "one.txt"))).toBe(true);
      // The Enter did not leave the second proposal pending: its question is still open, waiting for a key.
      await new Promise((r) => setTimeout(r, 500));
      const still = await tmux.screen(pane);
      expect(still).not.toContain("left pending");
      expect(still.trimEnd().endsWith("Ctrl-C cancels the turn")).toBe(true);
      // Keys that are no answer are ignored too.
      await tmux.keys(pane, "x", "Enter", "q");
      await tmux.keys(pane, "n");
      await tmux.waitFor(pane, (s) => s.includes("reason for the model"), "the reason question");
      await tmux.keys(pane, "Enter");
      const done = await tmux.waitFor(pane, (s) => s.includes("[exit "), "run to exit", 30_000);
      expect(done).toMatch(/Ctrl-C cancels the turn no, reject$/m);
      expect(done).toContain("Wrote one, not two.");
      expect(existsSync(join(t.stack.workspace, "two.txt"))).toBe(false);
    });

    it("n at `boxmaker approve` rejects, as it does in a turn, with the reason passed to the model", async () => {
      t.stack.sim.enqueue({ toolCalls: [write("call-k3", "three.txt")] });
      t.stack.sim.enqueue({ content: "Fine, no three." });
      const tmux = c.newTmux();
      // Asked in no terminal (the stack's own client): the proposal waits for `boxmaker approve`.
      const sessionId = (await t.client.createSession({ title: "keys" })).id;
      const events = t.client.send({ sessionId, text: "write three" });
      const it = events[Symbol.asyncIterator]();
      let proposalId = "";
      while (!proposalId) {
        const { value } = await it.next();
        const e = value!.event;
        if (e.case === "toolDecision" && e.value.proposalId) proposalId = e.value.proposalId;
      }
      const pane = await tmux.start(Tmux.cliLine(["approve", proposalId], c.env()));
      const q = await tmux.waitFor(pane, (s) => s.includes("[l]ater"), "approve's question");
      expect(q).toContain("Apply this write_file? [y]es, apply · [n]o, reject · [l]ater");
      await tmux.keys(pane, "n");
      await tmux.waitFor(pane, (s) => s.includes("reason for the model"), "the reason question");
      await tmux.type(pane, "not now");
      const done = await tmux.waitFor(pane, (s) => s.includes("[exit "), "approve to exit");
      expect(done).toContain("rejected");
      // Not applied, by the person's answer.
      expect(done).toContain("[exit 4]");
      for (;;) {
        const { value, done: end } = await it.next();
        if (end || value!.event.case === "turnDone") break;
      }
      const tool = (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages
        .filter((m) => m.role === "tool")
        .at(-1);
      expect(tool?.content).toContain("not now");
      expect(existsSync(join(t.stack.workspace, "three.txt"))).toBe(false);
    });
  },
);
