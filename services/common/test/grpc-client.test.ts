import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import type { ChildProcess } from "node:child_process";
import { execFile } from "node:child_process";
import { createServer as createHttp2Server, type Http2Server } from "node:http2";
import { createServer as createNetServer, type Socket } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  InferService,
  LoopService,
  RpcError,
  Status,
  addService,
  invalidArgument,
  prepareSocketPath,
  type ImplOf,
} from "@boxmaker/common";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import { createClient, type ClientOptions } from "@boxmaker/common/client";
import { frame as encodeFrame } from "../../../test/support/hostile-h2.js";
import { forkReady } from "../../../test/support/processes.js";
import { tempDir } from "../../../test/support/tmp.js";

// What the one client (grpc-js underneath) does for the daemons and the CLI:
// reach a daemon that is not up yet, notice one that died, keep deadlines,
// cancel, read replies of any size, give up on a peer that does not speak,
// and let its process end.

/** As the CLI makes it: every call bounded (services/cli/src/connection.ts). */
const CLI: ClientOptions = { unaryTimeoutMs: 30_000, headersTimeoutMs: 30_000, connectTimeoutMs: 10_000 };
function cliClient<T extends GenServiceMethods>(svc: GenService<T>, socket: string, options: ClientOptions<T> = {}) {
  return createClient(svc, socket, { ...(CLI as ClientOptions<T>), ...options });
}

const support = (f: string) => join(import.meta.dirname, "support", f);
let tmp: ReturnType<typeof tempDir>;
let sock: string;
let server: grpc.Server | undefined;
const children: ChildProcess[] = [];

type InferImpl = ImplOf<typeof InferService>;
async function serve(impl: Partial<InferImpl>) {
  server = new grpc.Server();
  addService(server, InferService, {
    status: async () => ({}),
    slotAction: async () => ({}),
    slotFiles: async () => ({}),
    countTokens: async () => ({}),
    complete: async function* () {},
    completeChannel: async function* () {},
    ...impl,
  });
  await prepareSocketPath(sock);
  await new Promise<void>((res, rej) =>
    server!.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
  );
}

const failure = (p: Promise<unknown>) => p.then(() => undefined).catch((e: unknown) => e as RpcError);

beforeEach(() => {
  tmp = tempDir("bx-h2c-");
  sock = join(tmp.dir, "d.sock");
});
afterEach(async () => {
  for (const c of children.splice(0)) c.kill("SIGKILL");
  await new Promise<void>((r) => (server ? server.tryShutdown(() => r()) : r()));
  server = undefined;
  tmp.cleanup();
});

describe("the gRPC client", () => {
  it("fails at once while nothing listens; with waitForReady the call goes through once the daemon is up", async () => {
    const c = cliClient(InferService, sock);
    const t0 = performance.now();
    const down = await failure(c.status({}));
    expect(down).toBeInstanceOf(RpcError);
    expect(down!.status).toBe(Status.UNAVAILABLE);
    expect(down!.message).toContain(sock);
    expect(performance.now() - t0).toBeLessThan(5_000);

    const bounded = await failure(c.status({}, { waitForReady: true, timeoutMs: 300 }));
    expect(bounded!.status).toBe(Status.DEADLINE_EXCEEDED);

    const waiting = c.status({}, { waitForReady: true, timeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 300));
    children.push(await forkReady(support("ticking-server.mjs"), [sock, "late"]));
    expect((await waiting).serverState).toBe("late");
    c.close();
  });

  it("ends a stream UNAVAILABLE when the daemon dies under it, and reaches its successor with the next call", async () => {
    const first = await forkReady(support("ticking-server.mjs"), [sock, "first"]);
    children.push(first);
    const c = cliClient(InferService, sock);
    const seen: string[] = [];
    const lost = await failure(
      (async () => {
        for await (const ev of c.complete({})) {
          if (ev.event.case === "content") seen.push(ev.event.value.text);
          if (seen.length === 3) first.kill("SIGKILL");
        }
      })(),
    );
    expect(seen.slice(0, 3)).toEqual(["0", "1", "2"]);
    expect(lost).toBeInstanceOf(RpcError);
    expect(lost!.status).toBe(Status.UNAVAILABLE);

    children.push(await forkReady(support("ticking-server.mjs"), [sock, "second"]));
    expect((await c.status({})).serverState).toBe("second");
    c.close();
  });

  it("ends a call at its deadline (DEADLINE_EXCEEDED) and on its signal (CANCELLED); the handler sees both", async () => {
    const handlerAborts: string[] = [];
    const hang = (why: string) => (signal: AbortSignal) =>
      new Promise<never>((_, rej) =>
        signal.addEventListener("abort", () => {
          handlerAborts.push(why);
          rej(new Error("left"));
        }),
      );
    await serve({
      status: async (_req, ctx) => hang("unary")(ctx.signal),
      complete: async function* (_req, ctx) {
        yield { event: { case: "content", value: { text: "one" } } };
        await hang("stream")(ctx.signal);
      },
    });
    const c = cliClient(InferService, sock);
    const late = await failure(c.status({}, { timeoutMs: 150 }));
    expect(late!.status).toBe(Status.DEADLINE_EXCEEDED);

    const ac = new AbortController();
    const got: string[] = [];
    const stopped = await failure(
      (async () => {
        for await (const ev of c.complete({}, { signal: ac.signal })) {
          got.push(ev.event.case ?? "");
          ac.abort();
        }
      })(),
    );
    expect(got).toEqual(["content"]);
    expect(stopped!.status).toBe(Status.CANCELLED);

    const ac2 = new AbortController();
    const pending = failure(c.status({}, { signal: ac2.signal }));
    await new Promise((r) => setTimeout(r, 50));
    ac2.abort();
    expect((await pending)!.status).toBe(Status.CANCELLED);

    await expect.poll(() => [...handlerAborts].sort()).toEqual(["stream", "unary", "unary"]);
    c.close();
  });

  it("reads replies of any size, cut across HTTP/2 frames and flow-control windows, whole and in order", async () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const texts = Array.from({ length: 80 }, (_, i) => `${i}:`.padEnd(Math.floor(next() ** 2 * 300_000) + 3, "é"));
    const big = "x".repeat(3_000_000);
    await serve({
      status: async () => ({ buildInfo: big }),
      complete: async function* () {
        for (const text of texts) yield { event: { case: "content", value: { text } } };
      },
    });
    const c = cliClient(InferService, sock);
    expect((await c.status({})).buildInfo).toBe(big);
    const got: string[] = [];
    for await (const ev of c.complete({})) if (ev.event.case === "content") got.push(ev.event.value.text);
    expect(got.length).toBe(texts.length);
    expect(got).toEqual(texts);
    c.close();
  });

  it("carries the server's error message as it was written, non-ASCII included", async () => {
    await serve({
      status: async () => {
        throw invalidArgument("naïve path “~/ünïcode” — 100% refused", { field: "path" });
      },
    });
    const c = cliClient(InferService, sock);
    const err = await failure(c.status({}));
    expect(err!.status).toBe(Status.INVALID_ARGUMENT);
    expect(err!.message).toBe("naïve path “~/ünïcode” — 100% refused");
    expect(err!.details.field).toBe("path");
    c.close();
  });

  it("is told UNIMPLEMENTED for a service the daemon does not serve", async () => {
    await serve({});
    const c = cliClient(LoopService, sock);
    const err = await failure(c.listSessions({}));
    expect(err!.status).toBe(Status.UNIMPLEMENTED);
    c.close();
  });

  it("turns a reply that is not proper gRPC into a clear error, not a hang or a stray exception", async () => {
    // A bare HTTP/2 server answering each method its own wrong way.
    const answers: Record<string, (s: import("node:http2").ServerHttp2Stream) => void> = {
      Status: (s) => {
        s.respond({ ":status": 503 });
        s.end();
      },
      SlotAction: (s) => {
        s.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
        s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
        s.end(encodeFrame(Buffer.from([0xff, 0xff, 0xff])));
      },
      Complete: (s) => {
        s.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
        s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
        s.end(encodeFrame(Buffer.alloc(10)).subarray(0, 8));
      },
    };
    const h2: Http2Server = createHttp2Server();
    h2.on("stream", (s, headers) => {
      s.resume();
      const method = String(headers[":path"]).split("/").pop()!;
      const answer =
        answers[method] ??
        ((x) => {
          x.respond({ ":status": 200 });
          x.end();
        });
      answer(s);
    });
    await new Promise<void>((r) => h2.listen(sock, r));
    try {
      const c = cliClient(InferService, sock);
      // Each ends with a status and grpc-js's words for what was wrong, never a hang or a decoded half.
      const http = await failure(c.status({}));
      expect([http!.status, http!.message]).toEqual([Status.UNAVAILABLE, "Received HTTP status code 503"]);
      const garbage = await failure(c.slotAction({}));
      expect([garbage!.status, garbage!.message]).toEqual([
        Status.INTERNAL,
        "Response message parsing error: premature EOF",
      ]);
      // A last message cut short under an OK status is not handed over half: grpc-js drops it
      // and the stream ends with what was whole (here nothing).
      const received: unknown[] = [];
      const cut = await failure(
        (async () => {
          for await (const ev of c.complete({})) received.push(ev);
        })(),
      );
      expect([cut, received]).toEqual([undefined, []]);
      const loop = cliClient(LoopService, sock);
      const bare = await failure(loop.listSessions({}));
      loop.close();
      expect([bare!.status, bare!.message]).toEqual([
        Status.INTERNAL,
        "Received RST_STREAM with code 0 (Call ended without gRPC status)",
      ]);
      c.close();
    } finally {
      await new Promise((r) => h2.close(r));
    }
  });

  it("gives up on a socket that accepts and never speaks HTTP/2, instead of waiting forever", async () => {
    const accepted: Socket[] = [];
    const mute = createNetServer((c) => void accepted.push(c));
    await new Promise<void>((r) => mute.listen(sock, r));
    try {
      const c = cliClient(InferService, sock, { connectTimeoutMs: 200 });
      const err = await failure(c.status({}));
      expect([err!.status, err!.message]).toEqual([
        Status.UNAVAILABLE,
        `cannot reach ${sock}: it accepted the connection but sent no HTTP/2 settings within 0.2 s`,
      ]);
      // Waiting for it to become ready ends at the call's deadline (grpc-js keeps its connection
      // waiting for the settings meanwhile).
      const waited = await failure(c.status({}, { waitForReady: true, timeoutMs: 700 }));
      expect([waited!.status, waited!.message]).toEqual([
        Status.DEADLINE_EXCEEDED,
        `Status: deadline exceeded: ${sock} did not answer within 0.7 s`,
      ]);
      expect(accepted.length).toBeGreaterThanOrEqual(1);
      c.close();
    } finally {
      for (const a of accepted) a.destroy();
      await new Promise((r) => mute.close(r));
    }
  });

  it("ends a unary call nobody answers at its default deadline and a stream whose headers never come", async () => {
    // A bare HTTP/2 server: it speaks the protocol, takes every call, answers none.
    const seen: { path: string; timeout: string | undefined; reset: boolean }[] = [];
    const h2: Http2Server = createHttp2Server();
    h2.on("stream", (s, headers) => {
      s.resume();
      const call = {
        path: String(headers[":path"]),
        timeout: headers["grpc-timeout"] as string | undefined,
        reset: false,
      };
      seen.push(call);
      s.on("close", () => (call.reset = true));
    });
    await new Promise<void>((r) => h2.listen(sock, r));
    try {
      // The defaults: 30 s for a unary reply, sent as the call's grpc-timeout.
      const d = cliClient(InferService, sock);
      const ac = new AbortController();
      const pending = failure(d.status({}, { signal: ac.signal }));
      await expect.poll(() => seen.length).toBe(1);
      // What is left of 30 s once the connection is open, in milliseconds.
      expect(seen[0]!.timeout).toMatch(/^\d+m$/);
      expect(Number.parseInt(seen[0]!.timeout!, 10)).toBeGreaterThan(20_000);
      expect(Number.parseInt(seen[0]!.timeout!, 10)).toBeLessThanOrEqual(30_000);
      ac.abort();
      expect((await pending)!.status).toBe(Status.CANCELLED);
      d.close();

      const c = cliClient(InferService, sock, { unaryTimeoutMs: 300, headersTimeoutMs: 300 });
      const unary = await failure(c.status({}));
      expect([unary!.status, unary!.message]).toEqual([
        Status.DEADLINE_EXCEEDED,
        `Status: deadline exceeded: ${sock} did not answer within 0.3 s`,
      ]);
      const stream = await failure(
        (async () => {
          for await (const _ of c.complete({})) void _;
        })(),
      );
      expect([stream!.status, stream!.message]).toEqual([
        Status.DEADLINE_EXCEEDED,
        `Complete: deadline exceeded: ${sock} did not answer within 0.3 s`,
      ]);
      // A stream has no deadline of its own (none is sent), and the server saw each call given up.
      expect(seen.find((x) => x.path.endsWith("/Complete"))!.timeout).toBeUndefined();
      await expect.poll(() => seen.every((x) => x.reset)).toBe(true);
      c.close();
    } finally {
      await new Promise((r) => h2.close(r));
    }
  });

  it("lets a stream whose headers came run past the headers time, and a method waive it", async () => {
    const h2: Http2Server = createHttp2Server();
    let calls = 0;
    h2.on("stream", (s, headers) => {
      s.resume();
      calls++;
      if (String(headers[":path"]).endsWith("/Follow")) return; // waived below: it may wait
      s.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      // Silent for three headers times after the headers, then one event.
      setTimeout(() => {
        if (!s.closed) s.end(encodeFrame(Buffer.from([0x0a, 0x02, 0x6f, 0x6b])));
      }, 600);
    });
    await new Promise<void>((r) => h2.listen(sock, r));
    try {
      const c = cliClient(LoopService, sock, { headersTimeoutMs: 200 });
      const got: string[] = [];
      for await (const ev of c.send({ sessionId: "s" })) got.push(ev.sessionId);
      expect(got).toEqual(["ok"]);

      const w = cliClient(LoopService, sock, {
        headersTimeoutMs: 200,
        methods: { follow: { headersTimeoutMs: 0 } },
      });
      const ac = new AbortController();
      const waiting = failure(
        (async () => {
          for await (const _ of w.follow({ sessionId: "s" }, { signal: ac.signal })) void _;
        })(),
      );
      await new Promise((r) => setTimeout(r, 600));
      ac.abort();
      // Ended by the signal, three headers times later, not by a timer.
      expect((await waiting)!.status).toBe(Status.CANCELLED);
      expect(calls).toBe(2);
      c.close();
      w.close();
    } finally {
      await new Promise((r) => h2.close(r));
    }
  });

  it("does not keep its process alive once its calls are done, even left open", async () => {
    await serve({ status: async () => ({ serverState: "answered" }) });
    const { stdout } = await promisify(execFile)(process.execPath, [support("unclosed-client.mjs"), sock], {
      timeout: 20_000,
    });
    expect(stdout.trim()).toBe("answered");
  });
});
