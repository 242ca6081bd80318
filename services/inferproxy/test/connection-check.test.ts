import { afterEach, describe, expect, it } from "vitest";
import net from "node:net";
import { join } from "node:path";
import { rawGet } from "../src/server-check/connection-check.js";
import { ServerCheckError, UpstreamTimeoutError } from "../src/errors.js";
import { LlamaClient } from "../src/upstream/llama-client.js";
import { HealthMonitor } from "../src/server-check/health-monitor.js";
import { createLogger } from "@boxmaker/common";
import { tempDir } from "../../../test/support/tmp.js";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

/** A server that answers each request on a connection with the next canned response. */
async function canned(responses: string[]): Promise<{ path: string; connections: () => number }> {
  const tmp = tempDir("bxcc-");
  const path = join(tmp.dir, "s.sock");
  let connections = 0;
  const socks = new Set<net.Socket>();
  const server = net.createServer((sock) => {
    connections++;
    socks.add(sock);
    sock.on("close", () => socks.delete(sock));
    let i = 0;
    let buf = "";
    sock.on("data", (b) => {
      buf += b.toString();
      while (buf.includes("\r\n\r\n")) {
        buf = buf.slice(buf.indexOf("\r\n\r\n") + 4);
        const r = responses[Math.min(i++, responses.length - 1)];
        if (r !== undefined) sock.write(r);
      }
    });
  });
  await new Promise<void>((r) => server.listen(path, r));
  cleanups.push(
    () => {
      for (const x of socks) x.destroy();
      return new Promise((r) => server.close(r));
    },
    () => tmp.cleanup(),
  );
  return { path, connections: () => connections };
}

const json = (body: string, status = "200 OK") =>
  `HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nKeep-Alive: timeout=5, max=100\r\n\r\n${body}`;

describe("rawGet", () => {
  it("reads a Content-Length answer and a chunked one, leaving the socket paused and clean", async () => {
    const chunked = `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"a":\r\n2\r\n1}\r\n0\r\n\r\n`;
    const srv = await canned([json('{"x":"é"}'), chunked]);
    const sock = net.connect(srv.path);
    await new Promise((r) => sock.once("connect", r));
    expect(await rawGet(sock, "h", "/props", 1000)).toEqual({ status: 200, body: '{"x":"é"}' });
    expect(sock.listenerCount("data")).toBe(0);
    expect(await rawGet(sock, "h", "/props", 1000)).toEqual({ status: 200, body: '{"a":1}' });
    sock.destroy();
  });

  it("fails on a closed connection or a timeout", async () => {
    const tmp = tempDir("bxcc-");
    cleanups.push(() => tmp.cleanup());
    const path = join(tmp.dir, "s.sock");
    const socks: net.Socket[] = [];
    const server = net.createServer((s) => {
      socks.push(s);
      s.end();
    });
    await new Promise<void>((r) => server.listen(path, r));
    cleanups.push(() => {
      for (const x of socks) x.destroy();
      return new Promise((r) => server.close(r));
    });
    const sock = net.connect(path);
    await expect(rawGet(sock, "h", "/props", 1000)).rejects.toThrow(/closed the connection/);
    const srv = await canned([]);
    const quiet = net.connect(srv.path);
    await expect(rawGet(quiet, "h", "/props", 100)).rejects.toThrow(/longer than 100 ms/);
    expect(quiet.destroyed).toBe(true);
  });
});

describe("LlamaClient with a connection check", () => {
  it("checks /props once per new connection, then sends requests on it; a refusal reaches the request", async () => {
    const srv = await canned([json('{"model_path":"a"}'), json('{"status":"ok"}')]);
    const seen: string[] = [];
    let refuse = false;
    const client = new LlamaClient(
      { socket_path: srv.path },
      {
        timeoutMs: 1000,
        onProps: (r) => {
          seen.push(r.body);
          if (refuse) throw new ServerCheckError("mismatch", "not the contract's server");
        },
      },
    );
    cleanups.push(() => client.close());
    const a = await client.json({ method: "GET", path: "/health", timeoutMs: 1000 });
    expect(a.json).toEqual({ status: "ok" });
    for (let i = 0; i < 4; i++) await client.json({ method: "GET", path: "/health", timeoutMs: 1000 });
    // One check per connection, and connections are kept alive and reused.
    expect(seen.length).toBe(srv.connections());
    expect(seen.length).toBeLessThan(5);
    expect(seen[0]).toBe('{"model_path":"a"}');

    const other = new LlamaClient(
      { socket_path: srv.path },
      {
        timeoutMs: 1000,
        onProps: () => {
          refuse = true;
          throw new ServerCheckError("mismatch", "not the contract's server");
        },
      },
    );
    cleanups.push(() => other.close());
    await expect(other.json({ method: "GET", path: "/health", timeoutMs: 1000 })).rejects.toMatchObject({
      code: "SERVER_CHECK_REFUSED",
      kind: "mismatch",
    });
    await expect(other.stream("/v1/chat/completions", "{}", new AbortController().signal)).rejects.toBeInstanceOf(
      ServerCheckError,
    );
  });

  it("a request waiting on a connection whose check hangs still ends at its own time limit", async () => {
    // A stopped llama-server: the kernel accepts the connection, nothing ever answers.
    const srv = await canned([]);
    const client = new LlamaClient({ socket_path: srv.path }, { timeoutMs: 10_000, onProps: () => undefined });
    cleanups.push(() => client.close());
    await expect(client.json({ method: "GET", path: "/slots", timeoutMs: 100 })).rejects.toBeInstanceOf(
      UpstreamTimeoutError,
    );
  }, 5_000); // well before the connection check's own 10 s

  it("a loading server's 503 that closes the connection is loading, not down; once loaded it is used", async () => {
    const loading = '{"error":{"message":"Loading model","type":"unavailable_error","code":503}}';
    const closing = `HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${loading.length}\r\nConnection: close\r\n\r\n${loading}`;
    const answers = [closing];
    const srv = await canned(answers);
    const m = new HealthMonitor({
      contract: { template_sha256: "", n_ctx_per_slot: 0, total_slots: 1 },
      pollMs: 50,
      timeoutMs: 1000,
      log: createLogger("t", "silent"),
    });
    const client = new LlamaClient(
      { socket_path: srv.path },
      { timeoutMs: 1000, onProps: (r) => m.checkConnection(r) },
    );
    cleanups.push(
      () => client.close(),
      () => m.stop(),
    );
    await m.start(client);
    expect(m.state).toBe("loading");
    // Loaded: /props and /health answer on a kept connection.
    answers[0] = json('{"total_slots":1,"default_generation_settings":{"n_ctx":0}}');
    await m.check();
    expect(m.state).toBe("ok");
  });
});
