import { describe, expect, it } from "vitest";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * Permission modes in chat on a real terminal: chosen with --mode, switched
 * with /mode and with `boxmaker mode` from another pane, shown in the prompt
 * line — and never touching the prompt cache, since a mode is policy, not tools.
 */
describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))("permission modes in chat", () => {
  const c = useChatTty("bxm-");
  const t = c.t;

  it("read-only refuses, /mode auto-edit applies writes, boxmaker mode from a second pane asks again; the cache stays warm", async () => {
    const write = (n: number, path: string) => {
      t.stack.sim.enqueue({
        toolCalls: [{ id: `call-m${n}`, name: "write_file", arguments: JSON.stringify({ path, content: `v${n}\n` }) }],
      });
      t.stack.sim.enqueue({ content: `Answer ${n}.` });
    };
    const tmux = c.newTmux();
    const chat = await tmux.start(Tmux.cliLine(["chat", "--mode", "plan"], c.env()));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.waitFor(chat, (s) => /^read-only › $/m.test(s), "the mode in the prompt line");

    write(1, "plan.txt");
    await tmux.type(chat, "write plan.txt");
    const planned = await tmux.waitFor(chat, (s) => s.includes("Answer 1."), "the first turn");
    expect(planned).toMatch(/· mode read-only/);
    expect(planned).toContain("plan mode");
    expect(existsSync(join(t.stack.workspace, "plan.txt"))).toBe(false);
    const id = /session (s-[a-z0-9-]+)/.exec(planned)![1]!;

    await tmux.type(chat, "/mode auto-edit");
    const switched = await tmux.waitFor(chat, (s) => /^auto-edit › $/m.test(s), "the prompt line after /mode");
    expect(switched).toContain(`${id}: mode auto-edit (was read-only) — file writes are applied without asking`);

    write(2, "edit.txt");
    await tmux.type(chat, "write edit.txt");
    const edited = await tmux.waitFor(chat, (s) => s.includes("Answer 2."), "the second turn");
    expect(edited).not.toContain("[l]ater"); // applied without a question
    expect(readFileSync(join(t.stack.workspace, "edit.txt"), "utf8")).toBe("v2\n");

    // Another terminal sets it back to ask; chat's /mode reads it again.
    const other = await tmux.split(Tmux.cliLine(["mode", id, "ask"], c.env()));
    const said = await tmux.waitFor(other, (s) => s.includes("[exit "), "boxmaker mode to exit");
    expect(said).toContain(`${id}: mode ask (was auto-edit)`);
    expect(said).toContain("[exit 0]");
    await tmux.type(chat, "/mode");
    await tmux.waitFor(chat, (s) => /^ask › $/m.test(s), "the prompt line after /mode read it again");

    write(3, "asked.txt");
    await tmux.type(chat, "write asked.txt");
    await tmux.waitFor(chat, (s) => s.includes("[l]ater"), "the in-place question");
    await tmux.keys(chat, "y");
    await tmux.waitFor(chat, (s) => s.includes("Answer 3."), "the third turn");
    expect(readFileSync(join(t.stack.workspace, "asked.txt"), "utf8")).toBe("v3\n");

    // show and status name the mode.
    const show = await tmux.split(Tmux.cliLine(["show", id], c.env()));
    expect(await tmux.waitFor(show, (s) => s.includes("[exit "), "show to exit")).toMatch(/mode: ask · /);

    // Three switches, one tools array, and the cache kept warm: each request found everything the one
    // before it read still cached (the simulator, like llama-server, charges prompt_n for what it re-reads).
    const reqs = t.stack.sim.completions.slice(-6);
    expect(reqs).toHaveLength(6);
    const toolsOf = (b: unknown) => (b as { tools: unknown[] }).tools;
    for (const [k, r] of reqs.entries()) {
      expect(toolsOf(r.body)).toEqual(toolsOf(reqs[0]!.body));
      if (k === 0) continue;
      const prev = reqs[k - 1]!;
      expect({ k, cached: r.cacheN! >= prev.cacheN! + prev.timings!.prompt_n }).toEqual({ k, cached: true });
    }
    // loopd's own accounting agrees: Σprompt_n over new tokens never above 1, no poor streak, no warning.
    const health = (await t.client.getSession({ id })).session!.cacheHealth!;
    expect(health.requests).toBe(5);
    expect(health.ratio).toBeGreaterThan(0);
    expect(health.ratio).toBeLessThanOrEqual(1);
    expect(health.poorStreak).toBe(0);
    expect(health.warning).toBe("");

    await tmux.keys(chat, "C-d");
    expect(await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit")).toContain("[exit 0]");
  });
});
