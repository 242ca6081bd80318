import { describe, expect, it } from "vitest";
import { ErrorReason, Status } from "@boxmaker/common";
import { errorBodyOf, mapConnectError, mapHttpError, mapStreamError } from "../src/error-mapping.js";
import { recording } from "./support/recordings.js";

const ctx = { upstream: "unix:/run/boxmaker/llama.sock", what: "completion", slot: 1, retryAfterMs: 2000 };

function httpError(name: string, what = "completion") {
  const r = recording(name).response;
  return mapHttpError(r.status, errorBodyOf(JSON.parse(r.body), r.body), { ...ctx, what });
}

describe("error mapping (recorded server answers)", () => {
  it("context overflow → FAILED_PRECONDITION with sizes and advice", () => {
    for (const name of ["error-context-overflow", "error-context-overflow-stream"]) {
      const e = httpError(name);
      expect(e.status).toBe(Status.FAILED_PRECONDITION);
      expect(e.details).toMatchObject({ nPromptTokens: 13922, nCtx: 1024, reason: ErrorReason.CONTEXT_OVERFLOW });
      expect(e.message).toMatch(/13922 tokens but slot 1 holds 1024.*compact/);
    }
  });

  it("503 while loading → UNAVAILABLE with retry advice", () => {
    const e = httpError("health-loading");
    expect(e.status).toBe(Status.UNAVAILABLE);
    expect(e.details.retryAfterMs).toBe(2000);
    expect(e.message).toMatch(/Loading model.*retry in 2000 ms/);
  });

  it("HTTP 500 for a body the server could not parse → INTERNAL with its message", () => {
    const e = httpError("error-bad-json");
    expect(e.status).toBe(Status.INTERNAL);
    expect(e.message).toContain("[json.exception.parse_error.101]");
  });

  it("missing slot save file → FAILED_PRECONDITION with the server's message", () => {
    const e = httpError("error-slot-restore-missing", "slot restore");
    expect(e.status).toBe(Status.FAILED_PRECONDITION);
    expect(e.message).toContain("Unable to restore slot");
  });

  it("an error object inside a 200 stream → ABORTED naming the server's message", () => {
    const body = recording("error-parse-in-stream").response.body;
    const last = body.split("\n\n").filter(Boolean).at(-1)!;
    const e = mapStreamError(errorBodyOf(JSON.parse(last.slice(6)), last), ctx);
    expect(e.status).toBe(Status.ABORTED);
    expect(e.message).toContain("does not match the expected peg-native format");
    expect(e.details).toMatchObject({ upstreamCode: 500, upstreamType: "server_error" });
  });

  it("a refused or missing socket → UNAVAILABLE naming the socket", () => {
    for (const code of ["ECONNREFUSED", "ENOENT"]) {
      const err = Object.assign(new Error(`connect ${code}`), { code });
      const e = mapConnectError(err, ctx);
      expect(e.status).toBe(Status.UNAVAILABLE);
      expect(e.message).toContain("unix:/run/boxmaker/llama.sock");
      expect(e.details.errno).toBe(code);
    }
  });
});
