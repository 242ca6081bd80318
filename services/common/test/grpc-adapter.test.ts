import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { existsSync, statSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import {
  BoxmakerError,
  describeCause,
  ErrorReason,
  InferService,
  RpcError,
  Status,
  addService,
  createClient,
  failedPrecondition,
  prepareSocketPath,
  SocketInUseError,
  restrictSocket,
  type ImplOf,
} from "@boxmaker/common";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let server: grpc.Server;
let sock: string;

type InferImpl = ImplOf<typeof InferService>;
/** Answers each start with its request id as content, then an OK end. */
const echoChannel: InferImpl["completeChannel"] = async function* (requests) {
  for await (const r of requests) {
    if (r.kind.case !== "start") continue;
    const text = r.kind.value.requestId;
    yield { callId: r.callId, kind: { case: "event", value: { event: { case: "content", value: { text } } } } };
    yield { callId: r.callId, kind: { case: "end", value: { code: Status.OK } } };
  }
};

async function serve(
  impl: Omit<InferImpl, "completeChannel" | "slotFiles" | "countTokens"> &
    Partial<Pick<InferImpl, "completeChannel" | "slotFiles" | "countTokens">>,
) {
  server = new grpc.Server();
  addService(server, InferService, {
    completeChannel: echoChannel,
    slotFiles: async () => ({}),
    countTokens: async () => ({}),
    ...impl,
  });
  await prepareSocketPath(sock);
  await new Promise<void>((res, rej) =>
    server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
  );
  restrictSocket(sock);
}

beforeEach(() => {
  tmp = tempDir();
  sock = join(tmp.dir, "t.sock");
});
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.tryShutdown(() => r()) : r()));
  tmp.cleanup();
});

// The one client against the daemons' own server, as the daemons make it (no
// limits: their calls may legitimately wait) and as the CLI does (every call
// bounded): both must read every reply, error and cancel alike.
const clients = [
  ["the daemons' limits", (svc: typeof InferService, s: string) => createClient(svc, s)],
  [
    "the CLI's limits",
    (svc: typeof InferService, s: string) =>
      createClient(svc, s, { unaryTimeoutMs: 30_000, headersTimeoutMs: 30_000, connectTimeoutMs: 10_000 }),
  ],
] as const;

describe.each(clients)("grpc adapter over a Unix socket, client with %s", (_name, createClient) => {
  it("serves unary and streaming calls with typed messages", async () => {
    await serve({
      status: async () => ({ serverState: "ok", buildInfo: "b1" }),
      slotAction: async (req) => ({ slot: req.slot, tokens: 7 }),
      complete: async function* (req) {
        for (const t of ["a", "b", "c"]) yield { event: { case: "content", value: { text: t + req.requestId } } };
      },
    });
    expect(statSync(sock).mode & 0o777).toBe(0o660);
    const c = createClient(InferService, sock);
    const st = await c.status({});
    expect(st.serverState).toBe("ok");
    expect((await c.slotAction({ slot: 2 })).tokens).toBe(7);
    const texts: string[] = [];
    for await (const ev of c.complete({ requestId: "!" })) {
      if (ev.event.case === "content") texts.push(ev.event.value.text);
    }
    expect(texts).toEqual(["a!", "b!", "c!"]);
    c.close();
  });

  it("carries typed errors with structured details to the client", async () => {
    await serve({
      status: async () => {
        throw failedPrecondition("prompt too long", {
          reason: ErrorReason.CONTEXT_OVERFLOW,
          nPromptTokens: 13922,
          nCtx: 1024,
        });
      },
      slotAction: async () => {
        throw new Error("boom");
      },
      complete: async function* () {
        yield { event: { case: "content", value: { text: "x" } } };
        throw new RpcError(Status.DEADLINE_EXCEEDED, "silent for 5000 ms");
      },
    });
    const c = createClient(InferService, sock);
    const err = await c.status({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).status).toBe(Status.FAILED_PRECONDITION);
    expect((err as RpcError).details).toMatchObject({
      reason: ErrorReason.CONTEXT_OVERFLOW,
      nPromptTokens: 13922,
      nCtx: 1024,
    });
    const internal = (await c.slotAction({}).catch((e: unknown) => e)) as RpcError;
    expect(internal.status).toBe(Status.INTERNAL);
    expect(internal.message).toContain("boom");
    const got: string[] = [];
    const streamErr = await (async () => {
      for await (const ev of c.complete({})) got.push(ev.event.case ?? "");
    })().catch((e: unknown) => e as RpcError);
    expect(got).toEqual(["content"]);
    expect(streamErr!.status).toBe(Status.DEADLINE_EXCEEDED);
    c.close();
  });

  it("keeps a BoxmakerError's status, stable code and cause across the wire", async () => {
    const disk = Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    await serve({
      status: async () => {
        throw new BoxmakerError("LOG_WRITE_FAILED", "cannot write the session log", {
          cause: disk,
          status: Status.RESOURCE_EXHAUSTED,
        });
      },
      slotAction: async () => {
        throw new Error("boom", { cause: new Error("underneath") });
      },
      complete: async function* () {},
    });
    const c = createClient(InferService, sock);
    const err = (await c.status({}).catch((e: unknown) => e)) as RpcError;
    expect(err).toBeInstanceOf(RpcError);
    expect(err.status).toBe(Status.RESOURCE_EXHAUSTED);
    expect(err.code).toBe("LOG_WRITE_FAILED");
    expect(err.details.errorCode).toBe("LOG_WRITE_FAILED");
    expect(err.message).toBe("cannot write the session log");
    expect(describeCause(err)).toBe("cannot write the session log: ENOSPC: no space left on device, write");
    expect(err.details.reason).toBe(ErrorReason.UNSPECIFIED);
    // An unknown error is INTERNAL; its own cause chain still reaches the client.
    const internal = (await c.slotAction({}).catch((e: unknown) => e)) as RpcError;
    expect(internal.status).toBe(Status.INTERNAL);
    expect(internal.code).toBe("");
    expect(describeCause(internal)).toBe("boom: underneath");
    c.close();
  });

  it("does not abort a handler's signal after its call completed normally (unary and stream)", async () => {
    const signals: AbortSignal[] = [];
    await serve({
      status: async (_req, ctx) => {
        signals.push(ctx.signal);
        return { serverState: "ok" };
      },
      slotAction: async () => ({}),
      complete: async function* (_req, ctx) {
        signals.push(ctx.signal);
        yield { event: { case: "content", value: { text: "x" } } };
      },
    });
    const c = createClient(InferService, sock);
    for (let i = 0; i < 5; i++) {
      await c.status({});
      for await (const _ of c.complete({})) void _;
    }
    c.close();
    // grpc-js reports "cancelled" while closing finished calls; give it time to.
    await new Promise((r) => setTimeout(r, 100));
    expect(signals).toHaveLength(10);
    expect(signals.filter((sg) => sg.aborted).map((sg) => String(sg.reason))).toEqual([]);
  });

  it("tells the handler when the client cancels a stream", async () => {
    let aborted!: () => void;
    const sawAbort = new Promise<void>((r) => (aborted = r));
    await serve({
      status: async () => ({}),
      slotAction: async () => ({}),
      complete: async function* (_req, ctx) {
        ctx.signal.addEventListener("abort", () => aborted());
        for (let i = 0; ; i++) {
          yield { event: { case: "content", value: { text: String(i) } } };
          await new Promise((r) => setTimeout(r, 5));
          if (ctx.signal.aborted) return;
        }
      },
    });
    const c = createClient(InferService, sock);
    let n = 0;
    for await (const _ of c.complete({})) if (++n === 3) break;
    await sawAbort;
    c.close();
  });
});

describe("grpc adapter, bidirectional", () => {
  it("serves a bidirectional stream: requests in as they are sent, responses out as they are made", async () => {
    await serve({
      status: async () => ({}),
      slotAction: async () => ({}),
      complete: async function* () {},
    });
    const c = createClient(InferService, sock);
    const call = c.completeChannel();
    const seen: string[] = [];
    call.send({ callId: 1n, kind: { case: "start", value: { requestId: "one" } } });
    for await (const ev of call) {
      if (ev.kind.case === "event" && ev.kind.value.event.case === "content") {
        seen.push(`${ev.callId}:${ev.kind.value.event.value.text}`);
      }
      if (ev.kind.case === "end") {
        seen.push(`${ev.callId}:end ${ev.kind.value.code}`);
        // the second request goes out only after the first one's answer came back: one stream, both ways
        if (ev.callId === 1n) call.send({ callId: 2n, kind: { case: "start", value: { requestId: "two" } } });
        else call.end();
      }
    }
    expect(seen).toEqual(["1:one", "1:end 0", "2:two", "2:end 0"]);
    c.close();
  });
});

describe("socket lifecycle", () => {
  it("removes a stale socket but refuses a live one", async () => {
    const live = createServer();
    await new Promise<void>((r) => live.listen(sock, r));
    await expect(prepareSocketPath(sock)).rejects.toBeInstanceOf(SocketInUseError);
    await new Promise<void>((r) => live.close(() => r()));
    // A crashed process leaves the file behind with no listener: a child that listens, then is SIGKILLed.
    spawnSync(process.execPath, [
      "-e",
      'require("net").createServer().listen(process.argv[1], () => process.kill(process.pid, "SIGKILL"))',
      sock,
    ]);
    expect(statSync(sock).isSocket()).toBe(true);
    await prepareSocketPath(sock);
    expect(existsSync(sock)).toBe(false);
  });
});
