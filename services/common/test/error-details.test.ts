// The one error model over a real gRPC call on a Unix socket: a handler
// raises an RpcError with typed details (errors.proto), the client sees the
// numeric status and the same typed details, parsed once from the one binary
// trailer. Every ErrorReason makes the trip; generated details of any size
// arrive whole or cut as documented, and the connection keeps serving.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { join } from "node:path";
import fc from "fast-check";
import { create } from "@bufbuild/protobuf";
import {
  ErrorDetailsSchema,
  ErrorReason,
  InferService,
  RpcError,
  Status,
  addService,
  createClient,
  describeCause,
  encodeErrorDetails,
  prepareSocketPath,
  type ClientOf,
  type ErrorDetails,
  type ErrorDetailsInit,
} from "@boxmaker/common";
import { boundedDetails } from "../src/error-reply.js";
import { serviceDefinition } from "../src/grpc-server.js";
import { tempDir } from "../../../test/support/tmp.js";

const tmp = tempDir();
const sock = join(tmp.dir, "errors.sock");
const rawSock = join(tmp.dir, "raw.sock");
let server: grpc.Server;
let raw: grpc.Server;
let client: ClientOf<typeof InferService>;

/** What the next Status call throws; the handler raises whatever the test put here. */
let next: RpcError = new RpcError(Status.INTERNAL, "unset");
/** What the raw server's Status answers with: a reply no Boxmaker server would send. */
let rawReply: Partial<grpc.StatusObject> = { code: Status.INTERNAL };

const listen = (s: grpc.Server, path: string) =>
  new Promise<void>((res, rej) =>
    s.bindAsync(`unix://${path}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
  );

beforeAll(async () => {
  server = new grpc.Server();
  addService(server, InferService, {
    status: async () => {
      throw next;
    },
    complete: async function* () {
      yield { event: { case: "content", value: { text: "x" } } };
      throw next;
    },
    slotAction: async () => ({ slot: 1 }),
    slotFiles: async () => ({}),
    countTokens: async () => ({}),
    completeChannel: async function* () {},
  });
  await prepareSocketPath(sock);
  await listen(server, sock);
  raw = new grpc.Server();
  raw.addService(serviceDefinition(InferService), {
    status: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(rawReply),
  });
  await listen(raw, rawSock);
  client = createClient(InferService, sock);
});

afterAll(async () => {
  client.close();
  await Promise.all([server, raw].map((s) => new Promise<void>((r) => s.tryShutdown(() => r()))));
  tmp.cleanup();
});

const unaryFailure = () =>
  client.status({}).then(
    () => {
      throw new Error("the call succeeded");
    },
    (e: unknown) => e as RpcError,
  );

const streamFailure = async () => {
  try {
    for await (const _ of client.complete({})) {
      // the one event before the error
    }
  } catch (e) {
    return e as RpcError;
  }
  throw new Error("the stream ended without an error");
};

/** Every value of ErrorReason but UNSPECIFIED (protobuf-es enums map names both ways). */
const reasons = Object.values(ErrorReason).filter(
  (v): v is ErrorReason => typeof v === "number" && v !== ErrorReason.UNSPECIFIED,
);

/** The facts each reason is raised with in the daemons, and the status it comes with. */
const raised: Record<ErrorReason, [Status, ErrorDetailsInit]> = {
  [ErrorReason.UNSPECIFIED]: [Status.INTERNAL, {}],
  [ErrorReason.CONTEXT_OVERFLOW]: [
    Status.FAILED_PRECONDITION,
    { nPromptTokens: 13_922, nCtx: 1_024, upstream: "unix:/run/llama.sock", slot: 0, httpStatus: 400 },
  ],
  [ErrorReason.SELF_TEST_FAILED]: [Status.FAILED_PRECONDITION, { model: "/srv/models/other.gguf" }],
  [ErrorReason.SERVER_LOADING]: [Status.UNAVAILABLE, { retryAfterMs: 2_000 }],
  [ErrorReason.SERVER_UNVERIFIED]: [Status.UNAVAILABLE, { retryAfterMs: 500 }],
  [ErrorReason.SERVER_DOWN]: [Status.UNAVAILABLE, { retryAfterMs: 1_000, upstream: "unix:/run/llama.sock" }],
  [ErrorReason.THINKING_CAP_REFUSED]: [Status.ABORTED, { slot: 2, completionId: "chatcmpl-x" }],
  [ErrorReason.PREFIX_UNKNOWN]: [Status.FAILED_PRECONDITION, { field: "after_messages_token" }],
  [ErrorReason.TEMPLATE_NO_TOOLS]: [Status.FAILED_PRECONDITION, {}],
  [ErrorReason.FELL_BEHIND]: [Status.RESOURCE_EXHAUSTED, { resumeAfterSeq: 2n ** 53n + 7n }],
};

describe("ErrorDetails across a real gRPC call", () => {
  it("has a case here for every ErrorReason errors.proto declares", () => {
    expect(reasons.length).toBeGreaterThanOrEqual(9);
    for (const r of reasons) expect(raised[r], ErrorReason[r]).toBeDefined();
  });

  it.each(reasons.map((r) => [ErrorReason[r], r] as const))(
    "%s: the client sees the status, the reason and every fact, typed, on a unary call and a stream",
    async (_name, reason) => {
      const [status, facts] = raised[reason];
      next = new RpcError(status, `failed: ${ErrorReason[reason]}`, { reason, ...facts });
      for (const err of [await unaryFailure(), await streamFailure()]) {
        expect(err).toBeInstanceOf(RpcError);
        expect(err.status).toBe(status);
        expect(err.message).toBe(`failed: ${ErrorReason[reason]}`);
        expect(err.details).toEqual(create(ErrorDetailsSchema, { reason, ...facts }));
      }
    },
  );

  it("a domain error's code and its cause chain arrive as errorCode and cause", async () => {
    next = new RpcError(
      Status.RESOURCE_EXHAUSTED,
      "cannot write the session log",
      { errorCode: "LOG_WRITE_FAILED" },
      { cause: new Error("ENOSPC: no space left on device", { cause: new Error("write") }) },
    );
    const err = await unaryFailure();
    expect([err.status, err.code, err.details.errorCode]).toEqual([
      Status.RESOURCE_EXHAUSTED,
      "LOG_WRITE_FAILED",
      "LOG_WRITE_FAILED",
    ]);
    expect(err.details.cause).toBe("ENOSPC: no space left on device: write");
    expect(describeCause(err)).toBe("cannot write the session log: ENOSPC: no space left on device: write");
  });

  it("generated details of any size arrive whole or cut as bounded, and the connection keeps serving", async () => {
    // Short facts, and facts long enough that a few of them pass the bound (an echo of a hostile id).
    const text = fc.oneof(
      fc.string({ unit: "grapheme", maxLength: 40 }),
      fc.string({ unit: "grapheme", minLength: 2_000, maxLength: 12_000, size: "max" }),
    );
    const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
    const details = fc.record({
      reason: fc.constantFrom(...reasons),
      nPromptTokens: u32,
      nCtx: u32,
      retryAfterMs: u32,
      field: text,
      model: text,
      errorCode: fc.stringMatching(/^[A-Z_]{0,60}$/),
      upstream: text,
      slot: fc.option(u32, { nil: undefined }),
      httpStatus: u32,
      upstreamType: text,
      upstreamCode: u32,
      errno: fc.stringMatching(/^[A-Z_]{0,20}$/),
      livenessTimeoutMs: u32,
      silentMs: u32,
      livenessReason: text,
      completionId: text,
      resumeAfterSeq: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
    });
    let runs = 0;
    let cut = 0;
    await fc.assert(
      fc.asyncProperty(details, fc.string({ unit: "grapheme", maxLength: 5_000, size: "max" }), async (d, message) => {
        runs++;
        next = new RpcError(Status.FAILED_PRECONDITION, message, d);
        const sent = create(ErrorDetailsSchema, d);
        const err = await unaryFailure();
        // Anything else (UNAVAILABLE, INTERNAL) would be a reply the client could not read.
        expect(err.status).toBe(Status.FAILED_PRECONDITION);
        expect(err.details).toEqual(boundedDetails(sent));
        expectFacts(err.details, sent);
        if (encodeErrorDetails(err.details).length < encodeErrorDetails(sent).length) cut++;
        // The same connection still answers: the reply did not pass the header limit.
        await expect(client.slotAction({})).resolves.toMatchObject({ slot: 1 });
      }),
      { numRuns: 150 },
    );
    expect(runs).toBe(150);
    // The bound was reached, not just stayed under: most generated details are too large to travel whole.
    expect(cut).toBeGreaterThan(50);
  });

  it("a trailer that does not parse leaves the status and message, with no details", async () => {
    const c = createClient(InferService, rawSock);
    try {
      // Not a message; a string field longer than the bytes left; a string that is not UTF-8.
      for (const junk of [
        [0xff, 0xff, 0xff],
        [0x2a, 0x10, 0x61],
        [0x2a, 0x02, 0xc3, 0x28],
      ].map((b) => Buffer.from(b))) {
        const metadata = new grpc.Metadata();
        metadata.set("boxmaker-error-details-bin", junk);
        rawReply = { code: Status.FAILED_PRECONDITION, details: "refused", metadata };
        const err = (await c.status({}).catch((e: unknown) => e)) as RpcError;
        expect(err).toBeInstanceOf(RpcError);
        expect([err.status, err.message]).toEqual([Status.FAILED_PRECONDITION, "refused"]);
        expect(err.details).toEqual(create(ErrorDetailsSchema));
      }
    } finally {
      c.close();
    }
  });
});

/** What a caller acts on is exact; each string is whole or its start marked "...", within 1,000 bytes. */
function expectFacts(got: ErrorDetails, sent: ErrorDetails): void {
  const numbers = ["reason", "nPromptTokens", "nCtx", "retryAfterMs", "slot", "httpStatus", "upstreamCode"] as const;
  for (const k of numbers) expect(got[k], k).toBe(sent[k]);
  expect(got.livenessTimeoutMs).toBe(sent.livenessTimeoutMs);
  expect(got.silentMs).toBe(sent.silentMs);
  expect(got.resumeAfterSeq).toBe(sent.resumeAfterSeq);
  expect(got.errorCode).toBe(sent.errorCode);
  for (const k of ["field", "model", "upstream", "upstreamType", "livenessReason", "completionId"] as const) {
    if (got[k] === sent[k]) continue;
    expect(Buffer.byteLength(got[k]), k).toBeLessThanOrEqual(1_000);
    if (got[k] !== "") {
      expect(got[k].endsWith("..."), k).toBe(true);
      expect(sent[k].startsWith(got[k].slice(0, -3)), k).toBe(true);
    }
  }
}
