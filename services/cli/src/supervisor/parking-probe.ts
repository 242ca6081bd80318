import { messageOf } from "@boxmaker/common/lite";
import { postJson } from "./readiness.js";

export interface ParkingProbe {
  /** The server saves and restores slots (it was started with --slot-save-path). */
  works: boolean;
  /** One line for the operator. */
  why: string;
}

/**
 * Whether llama-server can save and restore slots, which session parking
 * needs. Asked with an action name no server knows: a server without
 * --slot-save-path refuses every slot action first (501 not_supported_error),
 * one with it goes on to refuse the unknown action (400 "Invalid action").
 * Nothing is saved, restored or erased, whatever the slot is doing.
 */
export async function probeSlotSave(where: { socketPath: string } | { url: string }): Promise<ParkingProbe> {
  try {
    const r = await postJson(where, "/slots/0?action=boxmaker-probe", {}, 10_000);
    return slotSaveAnswer(r.status, r.body);
  } catch (err) {
    return { works: false, why: `the server did not answer a slot probe (${messageOf(err)})` };
  }
}

/** Reads the server's answer to the probe. Pure, for tests. */
export function slotSaveAnswer(status: number, body: unknown): ParkingProbe {
  const error = (body as { error?: { type?: unknown; message?: unknown } } | undefined)?.error;
  const type = typeof error?.type === "string" ? error.type : "";
  const message = typeof error?.message === "string" ? error.message : "";
  if (status === 501 || type === "not_supported_error") {
    return { works: false, why: "the server was started without --slot-save-path" };
  }
  // The slot endpoints exist and got as far as reading the action: slot actions work.
  if (status === 400 && /invalid action/i.test(message))
    return { works: true, why: "the server saves slots (--slot-save-path)" };
  if (status === 200) return { works: true, why: "the server saves slots (--slot-save-path)" };
  return { works: false, why: `the server answered a slot probe with ${status}${message ? `: ${message}` : ""}` };
}
