import { afterEach, describe, expect, it } from "vitest";
import { createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { UpstreamConnectError } from "../src/errors.js";
import { LlamaClient } from "../src/upstream/llama-client.js";
import { tempDir } from "../../../test/support/tmp.js";

let server: Server | undefined;
let tmp = tempDir("bxlc-");
afterEach(async () => {
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  // (clients are closed by each test, so close() does not wait on kept-alive connections)
  server = undefined;
  tmp.cleanup();
  tmp = tempDir("bxlc-");
});

const OK =
  'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 15\r\nconnection: keep-alive\r\n\r\n{"status":"ok"}';

describe("LlamaClient", () => {
  it("reuses one keep-alive connection for consecutive requests", async () => {
    const sock = join(tmp.dir, "l.sock");
    const perConnection: number[] = [];
    server = createServer((c) => {
      const i = perConnection.push(0) - 1;
      c.on("data", () => {
        perConnection[i]!++;
        c.write(OK);
      });
    });
    await new Promise<void>((r) => server!.listen(sock, r));
    const client = new LlamaClient({ socket_path: sock });
    for (let i = 0; i < 5; i++)
      expect((await client.json({ method: "GET", path: "/health", timeoutMs: 2000 })).status).toBe(200);
    // undici's pool may open a spare connection, but connections are reused, not one per request.
    expect(perConnection.reduce((a, b) => a + b, 0)).toBe(5);
    expect(perConnection.length).toBeLessThanOrEqual(2);
    await client.close();
  });

  it("survives the server closing an idle connection just as a request is written", async () => {
    const sock = join(tmp.dir, "l.sock");
    const seen: Socket[] = [];
    let streamRequests = 0;
    // The first connection answers once, then drops whatever comes next without a reply: the
    // race between the server's idle timeout and the client's next request, made deterministic.
    server = createServer((c) => {
      seen.push(c);
      const first = seen.length === 1;
      let served = 0;
      c.on("data", () => {
        if (first && served++ > 0) return void c.destroy();
        if (!first) streamRequests++;
        c.write(
          first
            ? OK
            : "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n7\r\ndata: x\r\n0\r\n\r\n",
        );
      });
    });
    await new Promise<void>((r) => server!.listen(sock, r));
    const client = new LlamaClient({ socket_path: sock });
    expect((await client.json({ method: "GET", path: "/health", timeoutMs: 2000 })).status).toBe(200);
    const res = await client.stream("/v1/chat/completions", "{}", new AbortController().signal);
    expect(res.status).toBe(200);
    expect(await res.body.text()).toBe("data: x");
    expect(seen.length).toBe(2);
    expect(streamRequests).toBe(1);
    await client.close();
  });

  it("names the socket when nothing is there", async () => {
    const client = new LlamaClient({ socket_path: join(tmp.dir, "missing.sock") });
    const err = await client
      .stream("/v1/chat/completions", "{}", new AbortController().signal)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamConnectError);
    expect((err as UpstreamConnectError).errno).toBe("ENOENT");
    expect((err as Error).message).toContain("missing.sock");
    await client.close();
  });
});
