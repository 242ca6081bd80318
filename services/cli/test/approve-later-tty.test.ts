import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { cliArgv } from "../../../test/support/stack.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * "later" at the approval question leaves the proposal pending and says how
 * to decide it from any terminal — with the socket, when another terminal
 * would not find this stack by itself (here BOXMAKER_SOCKET chose it). The
 * printed command, run as printed from a shell without that variable, applies
 * the write and the waiting turn goes on.
 */
describe.skipIf(!requires("approvals on a terminal (pty tests)", ["tmux"]))(
  "approve later, from another terminal",
  () => {
    const c = useChatTty("bxal-");
    const t = c.t;

    it("prints a command another terminal can run as it is, and running it applies the write", async () => {
      t.stack.sim.enqueue({
        toolCalls: [
          { id: "w1", name: "write_file", arguments: '{"path": "later.txt", "content": "decided elsewhere\\n"}' },
        ],
      });
      t.stack.sim.enqueue({ content: "Written." });
      const tmux = c.newTmux();
      const run = await tmux.start(Tmux.cliLine(["run", "write later.txt"], c.env()));
      await tmux.waitFor(run, (s) => s.includes("[l]ater"), "the approval question");
      await tmux.keys(run, "l", "Enter");
      const screen = await tmux.waitFor(run, (s) => s.includes("from any terminal"), "the pending note");
      const m =
        /`BOXMAKER_SOCKET=(\S+) boxmaker approve (\S+)` or `BOXMAKER_SOCKET=\S+ boxmaker reject \S+` from any terminal/.exec(
          screen.replace(/\n/g, " "),
        );
      expect(m, JSON.stringify(screen)).not.toBeNull();
      expect(m![1]).toBe(t.stack.sockets.loopd);
      // Another terminal: no BOXMAKER_SOCKET of its own, only what was printed.
      const { BOXMAKER_SOCKET: _, ...env } = process.env;
      const other = spawnSync(process.execPath, cliArgv(["approve", "--yes", m![2]!]), {
        encoding: "utf8",
        env: { ...env, BOXMAKER_SOCKET: m![1]!, HOME: t.dir, XDG_CONFIG_HOME: join(t.dir, "no-config") },
      });
      expect(other.status, other.stderr).toBe(0);
      const done = await tmux.waitFor(run, (s) => s.includes("[exit "), "run to finish", 20_000);
      expect(done).toContain("Written.");
      expect(readFileSync(join(t.stack.workspace, "later.txt"), "utf8")).toBe("decided elsewhere\n");
    });
  },
);
