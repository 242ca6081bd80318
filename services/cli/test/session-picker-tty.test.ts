import { describe, expect, it } from "vitest";
import { useChatTty } from "./support/chat-tty.js";
import { Tmux } from "./support/tmux.js";
import { columns } from "../src/render/columns.js";
import { filtered, pickerKey, pickerLines, type PickerState } from "../src/session-picker/picker-state.js";
import { styleFor } from "../src/render/style.js";
import { requires } from "../../../test/support/requirements.js";

const plain = styleFor({ isTTY: false } as NodeJS.WriteStream, {});
const rows = ["fix the parser", "write the README", "fix the tests", "release notes"].map((title, i) => ({
  id: `s-${i}aaaaaaa-0000000${i}`,
  title,
  messages: i * 2,
  updatedUnixMs: Date.now() - i * 3_600_000,
  mode: "ask",
}));

describe("the session picker's logic", () => {
  it("narrows by every typed word, moves within what is left, and picks or cancels", () => {
    let s: PickerState = { rows, filter: "", index: 0 };
    const step = (key: object) => {
      const r = pickerKey(s, key);
      if (!("state" in r)) return r;
      s = r.state;
      return r;
    };
    for (const ch of "fix t") step({ sequence: ch, name: ch.trim() || "space" });
    expect(filtered(s).map((r) => r.title)).toEqual(["fix the parser", "fix the tests"]);
    step({ name: "down" });
    step({ name: "down" });
    expect(step({ name: "return" })).toEqual({ picked: rows[2]!.id });
    step({ name: "backspace" });
    expect(s.filter).toBe("fix ");
    expect(pickerKey(s, { name: "escape" })).toEqual({ cancelled: true });
    expect(pickerKey(s, { name: "c", ctrl: true })).toEqual({ cancelled: true });
    // A control character typed is no search text.
    expect(pickerKey(s, { sequence: "\x1b[2J" })).toEqual({ state: s });
  });

  it("fits any width and says when nothing matches", () => {
    for (const width of [20, 40, 80]) {
      const lines = pickerLines({ rows, filter: "", index: 3 }, plain, width, 2);
      for (const l of lines) expect(columns(l)).toBeLessThanOrEqual(width);
      // The chosen row is among the two shown.
      expect(lines.some((l) => l.startsWith("▸ "))).toBe(true);
    }
    expect(pickerLines({ rows, filter: "zzz", index: 0 }, plain, 80, 5).join("\n")).toContain("no session matches");
  });
});

describe.skipIf(!requires("boxmaker chat on a terminal (pty tests)", ["tmux"]))("chat -r on a terminal", () => {
  const c = useChatTty("bxpk-");
  const t = c.t;

  it("offers recent main sessions, newest first; typing narrows, Enter resumes the chosen one", async () => {
    const made: string[] = [];
    for (const title of ["alpha work", "beta work", "gamma notes"]) {
      made.push((await t.client.createSession({ title })).id);
      await new Promise((r) => setTimeout(r, 20));
    }
    const tmux = c.newTmux();
    const pane = await tmux.start(Tmux.cliLine(["chat", "-r"], c.env()), { columns: 60, rows: 20 });
    const list = await tmux.waitFor(pane, (s) => s.includes("resume which session?"), "the picker");
    const order = ["gamma notes", "beta work", "alpha work"].map((x) => list.indexOf(x));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    for (const l of list.split("\n")) expect(columns(l)).toBeLessThanOrEqual(60);
    await tmux.command("send-keys", "-t", pane, "-l", "work");
    await tmux.waitFor(pane, (s) => s.includes("(2 of") && !s.includes("gamma notes"), "the narrowed list");
    await tmux.keys(pane, "Down");
    await tmux.keys(pane, "Enter");
    const resumed = await tmux.waitFor(pane, (s) => s.includes("resuming session"), "the resumed chat");
    expect(resumed).toContain(`resuming session ${made[0]} (alpha work`);
    // The picker is gone from the screen: only the chat is left.
    expect(resumed).not.toContain("resume which session?");
    // Ctrl-D once the prompt reads (its mark is drawn by the reader itself): pressed before, no reader takes it.
    await tmux.waitFor(pane, (s) => /^ask › /m.test(s), "the chat prompt");
    await tmux.keys(pane, "C-d");
    await tmux.waitFor(pane, (s) => s.includes("[exit 0]"), "chat to end");
  });

  it("Esc resumes nothing and exits 0; without a terminal -r refuses in one line", async () => {
    await t.client.createSession({ title: "something" });
    const tmux = c.newTmux();
    const pane = await tmux.start(Tmux.cliLine(["chat", "-r"], c.env()));
    await tmux.waitFor(pane, (s) => s.includes("resume which session?"), "the picker");
    await tmux.keys(pane, "Escape");
    const done = await tmux.waitFor(pane, (s) => s.includes("[exit "), "chat to end");
    expect(done).toContain("nothing resumed");
    expect(done).toContain("[exit 0]");
    const piped = await t.stack.cli(["chat", "-r"]);
    expect(piped.code).toBe(2);
    expect(piped.stderr).toContain("--resume needs a terminal");
  });
});
