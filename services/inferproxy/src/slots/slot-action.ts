import {
  SlotActionKind,
  invalidArgument,
  type SlotActionRequest,
  type SlotActionResponseSchema,
} from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";

export type SlotActionInit = MessageInitShape<typeof SlotActionResponseSchema>;
type SlotActionName = "save" | "restore" | "erase";

/** A SlotAction request checked before anything is sent: the action by its server name, the slot and file. */
export interface CheckedSlotAction {
  slot: number;
  action: SlotActionName;
  filename: string;
}

/** Refuses what the server would refuse less helpfully, or would act on wrongly; throws INVALID_ARGUMENT. */
export function checkSlotAction(req: SlotActionRequest, totalSlots: number): CheckedSlotAction {
  const action =
    req.action === SlotActionKind.SAVE
      ? "save"
      : req.action === SlotActionKind.RESTORE
        ? "restore"
        : req.action === SlotActionKind.ERASE
          ? "erase"
          : undefined;
  if (!action) throw invalidArgument("slot action must be save, restore or erase", { field: "action" });
  if (req.slot >= totalSlots) {
    throw invalidArgument(`slot ${req.slot} does not exist: llama-server has slots 0..${totalSlots - 1}`, {
      field: "slot",
    });
  }
  if (action !== "erase" && !/^[A-Za-z0-9._-]+$/.test(req.filename)) {
    // The server resolves the name inside --slot-save-path; a path would be refused or escape it.
    throw invalidArgument(`filename must be a plain file name ([A-Za-z0-9._-]+), got ${JSON.stringify(req.filename)}`, {
      field: "filename",
    });
  }
  if (action !== "erase" && (req.filename === "." || req.filename === "..")) {
    throw invalidArgument("filename must not be . or ..", { field: "filename" });
  }
  return { slot: req.slot, action, filename: req.filename };
}

/** The server's answer to a slot action, reduced to the response's counts (0 for what it did not say). */
export function slotActionResult(slot: number, body: unknown): SlotActionInit {
  const b = (body ?? {}) as Record<string, unknown> & { timings?: Record<string, number> };
  const numOf = (k: string) => (typeof b[k] === "number" ? (b[k] as number) : 0);
  return {
    slot,
    tokens: numOf("n_saved") || numOf("n_restored") || numOf("n_erased"),
    bytes: BigInt(numOf("n_written") || numOf("n_read")),
    ms: b.timings?.save_ms ?? b.timings?.restore_ms ?? 0,
  };
}
