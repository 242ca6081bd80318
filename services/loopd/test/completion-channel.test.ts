// loopd's model requests over one CompleteChannel stream, against a real
// inferproxy (in process, on a real Unix socket) in front of the simulator,
// and against stand-ins for an older inferproxy and a stream that breaks.
import { afterEach, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { join } from "node:path";
import {
  ErrorReason,
  InferService,
  RpcError,
  Status,
  addService,
  createClient,
  prepareSocketPath,
  type ClientOf,
  type ImplOf,
} from "@boxmaker/common";
import { CompletionChannel } from "../src/model-requests/completion-channel.js";
import { collect, startStack, text, userMessages, type Stack } from "../../inferproxy/test/support/stack.js";
import { tempDir } from "../../../test/support/tmp.js";

let s: Stack | undefined;
let server: grpc.Server | undefined;
const tmp = tempDir();
afterEach(async () => {
  await s?.close();
  s = undefined;
  await new Promise<void>((r) => (server ? server.tryShutdown(() => r()) : r()));
  server = undefined;
});

/** The channel's `complete` in a client's clothes, so the inferproxy tests' helpers can drive it. */
const viaChannel = (client: ClientOf<typeof InferService>) => {
  const channel = new CompletionChannel(client);
  return { channel, client: { ...client, complete: channel.complete } };
};

describe("model requests over one stream to a real inferproxy", () => {
  it("two completions at once on two slots each get exactly what Complete gives", async () => {
    s = await startStack();
    const { channel, client } = viaChannel(s.client);
    s.sim.enqueue({ content: "first answer" }, 0);
    s.sim.enqueue({ content: "second answer" }, 1);
    const [a, b] = await Promise.all([
      collect(client, { slot: 0, messagesJson: userMessages("a"), requestId: "a" }),
      collect(client, { slot: 1, messagesJson: userMessages("b"), requestId: "b" }),
    ]);
    expect([a.error, b.error]).toEqual([undefined, undefined]);
    expect(text(a.events, "content")).toBe("first answer");
    expect(a.final?.content).toBe("first answer");
    expect(b.final?.content).toBe("second answer");
    // and the same through Complete
    s.sim.enqueue({ content: "first answer" }, 0);
    const direct = await collect(s.client, { slot: 0, messagesJson: userMessages("a"), requestId: "a" });
    expect(direct.final?.messageJson).toBe(a.final?.messageJson);
    channel.close();
  });

  it("a failed completion ends with Complete's status, details and code; the stream carries on", async () => {
    s = await startStack();
    const { channel, client } = viaChannel(s.client);
    const r = await collect(client, { slot: 0, messagesJson: "[]", afterMessagesToken: "forgotten" });
    expect(r.error).toBeInstanceOf(RpcError);
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    expect(r.error?.details.reason).toBe(ErrorReason.PREFIX_UNKNOWN);
    s.sim.enqueue({ content: "still here" });
    expect((await collect(client, { slot: 0, messagesJson: userMessages() })).final?.content).toBe("still here");
    channel.close();
  });

  it("a cancelled completion stops upstream at once and frees its slot for the next", async () => {
    s = await startStack();
    const { channel, client } = viaChannel(s.client);
    s.sim.enqueue({ content: Array.from({ length: 5_000 }, () => "x"), tokenDelayMs: 5 });
    const ac = new AbortController();
    let n = 0;
    const cut = (async () => {
      for await (const ev of client.complete({ slot: 2, messagesJson: userMessages() }, { signal: ac.signal })) {
        if (ev.event.case === "content" && ++n === 3) ac.abort();
      }
    })();
    await expect(cut).rejects.toMatchObject({ status: Status.CANCELLED });
    await s.sim.waitIdle(2);
    expect(s.sim.completions.at(-1)!.outcome).toBe("aborted");
    s.sim.enqueue({ content: "next" });
    expect((await collect(client, { slot: 2, messagesJson: userMessages() })).final?.content).toBe("next");
    channel.close();
  });
});

/** An InferService on a real socket whose completeChannel behaves as given. */
async function serve(completeChannel: ImplOf<typeof InferService>["completeChannel"]) {
  const sock = join(tmp.dir, `stand-in-${Math.random().toString(36).slice(2)}.sock`);
  let completes = 0;
  const impl: ImplOf<typeof InferService> = {
    status: async () => ({}),
    slotAction: async () => ({}),
    slotFiles: async () => ({}),
    countTokens: async () => ({}),
    complete: async function* () {
      completes++;
      yield { event: { case: "final", value: { content: "via Complete" } } };
    },
    completeChannel,
  };
  server = new grpc.Server();
  addService(server, InferService, impl);
  await prepareSocketPath(sock);
  await new Promise<void>((res, rej) =>
    server!.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
  );
  return { client: createClient(InferService, sock), completes: () => completes };
}

describe("model requests over one stream, when the stream cannot serve them", () => {
  it("an inferproxy without CompleteChannel (another build) fails the completion saying so; Complete is never tried", async () => {
    const p = await serve(async function* () {
      yield* [];
      throw new RpcError(Status.UNIMPLEMENTED, "unknown method");
    });
    const { channel, client } = viaChannel(p.client);
    const first = await collect(client, { slot: 0, messagesJson: userMessages() });
    expect(first.error?.status).toBe(Status.UNIMPLEMENTED);
    expect(first.error?.message).toContain("inferproxy has no CompleteChannel: it is from another build than loopd");
    expect(p.completes()).toBe(0);
    channel.close();
    p.client.close();
  });

  it("a stream that ends under a completion fails it UNAVAILABLE, and the next completion opens a new one", async () => {
    let opened = 0;
    const p = await serve(async function* (requests) {
      const stream = ++opened;
      // Requests are read apart from the answers, as inferproxy reads them.
      const starts: bigint[] = [];
      let wake: (() => void) | undefined;
      void (async () => {
        try {
          for await (const r of requests) {
            if (r.kind.case === "start") starts.push(r.callId);
            wake?.();
          }
        } catch {
          // the stream went away under the reader: nothing to read
        }
      })();
      for (;;) {
        while (!starts.length) await new Promise<void>((r) => (wake = r));
        const callId = starts.shift()!;
        if (stream === 1) return; // the first stream ends as soon as a completion starts on it
        yield { callId, kind: { case: "event", value: { event: { case: "content", value: { text: "ok" } } } } };
        yield { callId, kind: { case: "end", value: { code: Status.OK } } };
      }
    });
    const { channel, client } = viaChannel(p.client);
    const broken = await collect(client, { slot: 0, messagesJson: userMessages() });
    expect(broken.error?.status).toBe(Status.UNAVAILABLE);
    const next = await collect(client, { slot: 0, messagesJson: userMessages() });
    expect(next.error).toBeUndefined();
    expect(text(next.events, "content")).toBe("ok");
    expect(opened).toBe(2);
    channel.close();
    p.client.close();
  });
});
