import { messageOf } from "@boxmaker/common";
import { denied, type StepOutcome } from "./call-outcome.js";

export type ParsedArguments = { ok: true; args: unknown } | { ok: false; outcome: StepOutcome };

/**
 * The one place a call's argument text becomes a value: every later step
 * (policy, call_tool's target, staging) works on the parsed object.
 */
export function parseArguments(tool: string, json: string, maxBytes: number): ParsedArguments {
  const bytes = Buffer.byteLength(json);
  if (bytes > maxBytes) {
    return {
      ok: false,
      outcome: denied(
        "limit:argument-size",
        `The arguments are ${bytes} bytes, above the ${maxBytes}-byte limit. Split the work into smaller calls (e.g. write a file in parts with edit_file).`,
      ),
    };
  }
  try {
    return { ok: true, args: json.trim() === "" ? {} : JSON.parse(json) };
  } catch (err) {
    return {
      ok: false,
      outcome: denied(
        "arguments:not-json",
        `The arguments of ${tool} are not valid JSON (${messageOf(err)}). Send one JSON object matching the tool's parameters.`,
      ),
    };
  }
}
