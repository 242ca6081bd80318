import { messageOf } from "@boxmaker/common";
import { slotSample, type SlotSample } from "../completion/liveness.js";
import type { JsonResponse, LlamaClient } from "./llama-client.js";
import { controlOutcome, type ControlOutcome } from "../completion/thinking-cap.js";

/**
 * The short JSON calls inferproxy makes to llama-server besides the completion
 * stream, one function per endpoint, each reduced to what its caller decides on.
 */

/** What `GET /slots` says about one slot, for the liveness watchdog; undefined when it cannot tell. */
export async function probeSlot(
  client: LlamaClient,
  slot: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<SlotSample | undefined> {
  const res = await client.json({ method: "GET", path: "/slots", timeoutMs, signal });
  return res.status === 200 ? slotSample(res.json, slot) : undefined;
}

/** `reasoning_end` for a running completion; every failure is a refusal with a reason. */
export async function endReasoning(
  client: LlamaClient,
  completionId: string,
  timeoutMs: number,
): Promise<ControlOutcome> {
  try {
    const res = await client.json({
      method: "POST",
      path: "/v1/chat/completions/control",
      body: JSON.stringify({ id: completionId, action: "reasoning_end" }),
      timeoutMs,
    });
    return controlOutcome(res.status, res.json);
  } catch (err) {
    return { accepted: false, message: `control call failed: ${messageOf(err)}` };
  }
}

/** `GET /slots` as the server sends it (status-report.ts reads it). */
export function getSlots(client: LlamaClient, timeoutMs: number): Promise<JsonResponse> {
  return client.json({ method: "GET", path: "/slots", timeoutMs });
}

/** `POST /slots/{id}?action=…`: save and restore name a file in the server's --slot-save-path. */
export function postSlotAction(
  client: LlamaClient,
  req: { slot: number; action: "save" | "restore" | "erase"; filename: string },
  timeoutMs: number,
  signal: AbortSignal,
): Promise<JsonResponse> {
  return client.json({
    method: "POST",
    path: `/slots/${req.slot}?action=${req.action}`,
    body: req.action === "erase" ? undefined : JSON.stringify({ filename: req.filename }),
    timeoutMs,
    signal,
  });
}
