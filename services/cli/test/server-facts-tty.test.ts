import { describe, expect, it } from "vitest";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * #32 "beyond the others": the template probe's verdict and the slot a turn
 * ran on are on chat's normal screen, not only in `status` — through a real
 * terminal against the whole stack.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))(
  "chat shows the server's facts on its normal screen",
  () => {
    const c = useChatTty("bxsf-");
    const t = c.t;

    it("says the model and the template probe's verdict before the prompt, and each turn's slot in its closing line", async () => {
      const status = await t.client.status({});
      const verdict = status.infer!.templateProbe!.summary.replace(/ \(`boxmaker doctor` for the table\)$/, "");
      expect(verdict.length).toBeGreaterThan(10);
      t.stack.sim.enqueue({ content: "Hello." });
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()), { columns: 200, rows: 40 });
      const banner = await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      const lines = banner.split("\n");
      const probeAt = lines.findIndex((l) => l.includes(verdict));
      expect(probeAt, banner).toBeGreaterThanOrEqual(0);
      expect(lines[probeAt]).toContain(status.infer!.model || "the model");
      // Before the prompt's own hint line.
      expect(probeAt).toBeLessThan(lines.findIndex((l) => l.includes("Ctrl-D quits")));
      await tmux.type(chat, "hi");
      const done = await tmux.waitFor(chat, (s) => /— stop · 1 request/.test(s), "the turn");
      const main = status.slots.find((sl) => sl.role === "main")?.slot ?? 0;
      expect(done).toMatch(new RegExp(`— stop · 1 request .* · slot ${main}\\n`));
    });
  },
);
