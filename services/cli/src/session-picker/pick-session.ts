// The session picker on a terminal: drawn on stderr, redrawn in place on
// every key, read in raw mode, and the terminal left as it was found.
import { emitKeypressEvents } from "node:readline";
import type { LoopClient } from "../connection.js";
import { styleFor } from "../render/style.js";
import { eraseRows, writeText } from "../render/terminal-safe.js";
import { type PickerKey, type PickerRow, type PickerState, pickerKey, pickerLines } from "./picker-state.js";

/** How many recent sessions the picker offers: more than a person scrolls, fewer than a year holds. */
const OFFERED = 200;

/** The main sessions a person could resume, most recently active first. */
export async function recentSessions(client: LoopClient): Promise<PickerRow[]> {
  const { SessionRole } = await import("@boxmaker/common/client");
  const { sessions } = await client.listSessions({ limit: OFFERED });
  return sessions
    .filter((s) => s.role === SessionRole.MAIN && !s.parentId && s.state !== "archived")
    .map((s) => ({
      id: s.id,
      title: s.title,
      messages: s.messages,
      updatedUnixMs: Number(s.updatedUnixMs),
      mode: s.mode,
    }));
}

/** The id picked, or undefined when the person cancelled. */
export function pickSession(rows: PickerRow[]): Promise<string | undefined> {
  const input = process.stdin;
  const out = process.stderr;
  const style = styleFor(out);
  let state: PickerState = { rows, filter: "", index: 0 };
  let drawn = 0;
  const draw = () => {
    if (drawn) eraseRows(out, drawn);
    const width = Math.max(20, (out.columns || 80) - 1);
    const height = Math.max(3, Math.min(12, (out.rows || 24) - 4));
    const lines = pickerLines(state, style, width, height);
    writeText(out, lines.join("\n"));
    drawn = lines.length;
  };
  return new Promise((resolve) => {
    const finish = (id: string | undefined) => {
      input.off("keypress", onKey);
      if (input.isTTY) input.setRawMode(false);
      input.pause();
      if (drawn) eraseRows(out, drawn);
      resolve(id);
    };
    const onKey = (_: string | undefined, key: PickerKey | undefined) => {
      const step = pickerKey(state, key ?? {});
      if ("picked" in step) finish(step.picked);
      else if ("cancelled" in step) finish(undefined);
      else {
        state = step.state;
        draw();
      }
    };
    emitKeypressEvents(input);
    if (input.isTTY) input.setRawMode(true);
    input.on("keypress", onKey);
    input.resume();
    draw();
  });
}
