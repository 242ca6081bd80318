// POST /v1/chat/completions/control: the only action is reasoning_end, which
// closes the thinking block of a running completion sent with
// reasoning_control: true.

import type { ServerResponse } from "node:http";
import { jsonParseError } from "./completion.js";
import { errorBody, sendJson } from "./sse.js";
import type { SimState } from "./state.js";

export function handleControl(state: SimState, res: ServerResponse, raw: string): number {
  const log = (status: number, response: unknown, body: unknown) => {
    const b = body && typeof body === "object" ? (body as Record<string, unknown>) : {};
    state.controlCalls.push({
      at: Date.now(),
      body,
      ...(typeof b.id === "string" ? { id: b.id } : {}),
      ...(typeof b.action === "string" ? { action: b.action } : {}),
      status,
      response,
    });
    sendJson(res, status, response);
    return status;
  };
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch (err) {
    return log(500, errorBody(500, jsonParseError(raw, err), "server_error"), undefined);
  }
  const b = body && typeof body === "object" ? (body as Record<string, unknown>) : {};
  // The action is checked before the id (error-control-bad-action used an unknown id and still got 400).
  if (b.action !== "reasoning_end") {
    return log(400, errorBody(400, "unknown control action", "invalid_request_error"), body);
  }
  const active = typeof b.id === "string" ? state.active.get(b.id) : undefined;
  if (!active) return log(200, { success: false, message: "no active completion for this id" }, body);
  if (!active.endReasoning()) {
    return log(200, { success: false, message: "reasoning control is not enabled for this completion" }, body);
  }
  return log(200, { success: true }, body);
}
