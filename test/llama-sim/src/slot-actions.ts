// POST /slots/{id}?action=save|restore|erase. Save files hold the slot's
// token pieces (not KV tensors), so a restore brings back exactly the prefix
// the next request can reuse. As with the real server, a save overwrites the
// file of that name, nothing ever deletes one (erase empties the slot, not
// the directory), and restoring a file that is gone is a 400.

import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ServerResponse } from "node:http";
import { jsonParseError } from "./completion.js";
import { errorBody, sendJson } from "./sse.js";
import type { SimState } from "./state.js";

const SAVE_FORMAT = "llama-sim-slot/1";
/**
 * A real save file is the slot's KV cells, so its size grows with the tokens
 * saved: the recorded save (fixtures/llama-server/slot-save.json) wrote
 * 194,580 bytes for 715 tokens. The simulator's files are padded to the same
 * rate, so the disk a parked session costs, and a size cap over it, behave as
 * they would against that server.
 */
const BYTES_PER_TOKEN = Math.round(194_580 / 715);

function validFilename(name: unknown): name is string {
  return (
    typeof name === "string" &&
    name.length > 0 &&
    name.length <= 255 &&
    !/[/\\\0]/.test(name) &&
    name !== "." &&
    name !== ".."
  );
}

export async function handleSlotAction(
  state: SimState,
  res: ServerResponse,
  slotIdText: string,
  action: string | null,
  raw: string,
): Promise<number> {
  const reply = (status: number, body: unknown) => {
    sendJson(res, status, body);
    return status;
  };
  // llama-server refuses every slot action without --slot-save-path.
  const dir = state.config.slotSavePath;
  if (!dir) {
    return reply(
      501,
      errorBody(
        501,
        "This server does not support slots action. Start it with `--slot-save-path`",
        "not_supported_error",
      ),
    );
  }
  const id = Number(slotIdText);
  const slot = Number.isInteger(id) && id >= 0 ? state.slots[id] : undefined;
  if (!slot) return reply(400, errorBody(400, "Invalid slot ID", "invalid_request_error"));

  let body: Record<string, unknown> = {};
  if (raw.trim()) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
    } catch (err) {
      return reply(500, errorBody(500, jsonParseError(raw, err), "server_error"));
    }
  }

  if (action !== "save" && action !== "restore" && action !== "erase") {
    return reply(400, errorBody(400, "Invalid action", "invalid_request_error"));
  }
  if (action !== "erase" && !validFilename(body.filename)) {
    return reply(400, errorBody(400, "Invalid filename", "invalid_request_error"));
  }

  // A slot action on a busy slot waits for the running task, like any task.
  const release = await slot.acquire();
  if (!release) return reply(503, errorBody(503, "slot unavailable", "unavailable_error"));
  try {
    if (action === "erase") {
      return reply(200, { id_slot: slot.id, n_erased: slot.erase() });
    }
    const filename = body.filename as string;
    const file = path.join(dir, filename);
    const t0 = performance.now();
    if (action === "save") {
      const json = JSON.stringify({ format: SAVE_FORMAT, n_ctx: slot.nCtx, tokens: slot.tokens });
      // Trailing whitespace: still one JSON document for the restore to parse.
      const text = json.padEnd(slot.tokens.length * BYTES_PER_TOKEN, " ");
      await writeFile(file, text);
      const ms = performance.now() - t0;
      return reply(200, {
        id_slot: slot.id,
        filename,
        n_saved: slot.tokens.length,
        n_written: Buffer.byteLength(text),
        timings: { save_ms: Math.round(ms * 1000) / 1000 },
      });
    }
    let text: string;
    let tokens: unknown;
    try {
      text = await readFile(file, "utf8");
      const parsed = JSON.parse(text) as { format?: unknown; tokens?: unknown };
      if (parsed.format !== SAVE_FORMAT) throw new Error("not a slot save file");
      tokens = parsed.tokens;
      if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === "string") || tokens.length > slot.nCtx) {
        throw new Error("bad tokens");
      }
    } catch {
      return reply(
        400,
        errorBody(
          400,
          "Unable to restore slot: No available space in KV cache or invalid slot save file",
          "invalid_request_error",
        ),
      );
    }
    slot.tokens = tokens as string[];
    const ms = performance.now() - t0;
    return reply(200, {
      id_slot: slot.id,
      filename,
      n_restored: slot.tokens.length,
      n_read: Buffer.byteLength(text),
      timings: { restore_ms: Math.round(ms * 1000) / 1000 },
    });
  } finally {
    release();
  }
}
