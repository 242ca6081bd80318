import { afterEach, describe, expect, it, vi } from "vitest";
import { createServer } from "node:http";
import { join } from "node:path";
import { createLogger } from "@boxmaker/common";
import { HealthMonitor } from "../src/server-check/health-monitor.js";
import { LlamaClient } from "../src/upstream/llama-client.js";
import { tempDir } from "../../../test/support/tmp.js";

const contract = { template_sha256: "", n_ctx_per_slot: 0, total_slots: 1 };

/** A server whose /health answers whatever `status` is at the moment; counts the checks. */
function server() {
  const s = { status: 200, checks: 0 };
  const client = {
    label: "unix:/llama.sock",
    json: async () => {
      s.checks++;
      return { status: s.status, json: undefined, text: "" };
    },
  };
  return { s, client: client as never };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the health poll", () => {
  it("stretches while the server stays healthy, and is back at its interval the moment that changes", async () => {
    vi.useFakeTimers();
    const { s, client } = server();
    const m = new HealthMonitor({ contract, pollMs: 100, timeoutMs: 100, log: createLogger("t", "silent") });
    await m.start(client);
    expect(m.state).toBe("ok");
    const waits: number[] = [];
    for (let i = 0; i < 6; i++) {
      waits.push(m.nextPollMs());
      await vi.advanceTimersByTimeAsync(m.nextPollMs());
    }
    expect(waits).toEqual([100, 200, 400, 800, 1500, 1500]); // capped at 15 intervals (30 s at most)
    s.status = 503;
    await vi.advanceTimersByTimeAsync(m.nextPollMs());
    expect(m.state).toBe("loading");
    expect(m.nextPollMs()).toBe(100);
    m.stop();
  });

  it("a status request checks first when the last check is older than the interval", async () => {
    vi.useFakeTimers();
    const { s, client } = server();
    const m = new HealthMonitor({ contract, pollMs: 100, timeoutMs: 100, log: createLogger("t", "silent") });
    await m.start(client);
    await vi.advanceTimersByTimeAsync(100); // the first poll (t=100); the next is stretched to t=300
    await vi.advanceTimersByTimeAsync(50);
    const before = s.checks;
    await m.fresh();
    expect(s.checks).toBe(before); // checked 50 ms ago: fresh enough
    s.status = 500;
    await vi.advanceTimersByTimeAsync(100); // t=250: no poll due yet, but the last check is 150 ms old
    expect(m.state).toBe("ok");
    await m.fresh();
    expect(m.state).toBe("down");
    m.stop();
  });

  it("closes the poll's connection once answered, so its keep-alive timer does not wake the daemon again", async () => {
    const tmp = tempDir("bx-hp-");
    const sock = join(tmp.dir, "llama.sock");
    let open = 0;
    let healthChecks = 0;
    const server = createServer((req, res) => {
      if (req.url === "/health") healthChecks++;
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
    });
    server.on("connection", (c) => {
      open++;
      c.on("close", () => open--);
    });
    await new Promise<void>((r) => server.listen(sock, r));
    const client = new LlamaClient({ socket_path: sock } as never);
    const m = new HealthMonitor({ contract, pollMs: 50, timeoutMs: 1000, log: createLogger("t", "silent") });
    try {
      // The first check (at start, as a request would) keeps its connection.
      await m.start(client);
      expect(healthChecks).toBe(1);
      expect(open).toBe(1);
      // The poll uses it and closes it when answered, long before undici's 4 s keep-alive.
      await expect.poll(() => healthChecks).toBe(2);
      await expect.poll(() => open).toBe(0);
    } finally {
      m.stop();
      await client.close();
      await new Promise((r) => server.close(r));
      tmp.cleanup();
    }
  });
});
