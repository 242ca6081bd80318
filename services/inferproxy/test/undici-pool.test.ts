import { describe, expect, it } from "vitest";
import * as undici from "undici";
import { Pool, buildConnector, request } from "../src/upstream/undici-pool.js";

// inferproxy loads three of undici's files instead of its index (undici-pool.ts). An
// undici whose files moved or changed shape fails here, not at a user's first request.
describe("undici's parts, loaded without its index", () => {
  it("are the Pool, connector and request the index exports", () => {
    expect(Pool).toBe(undici.Pool);
    expect(buildConnector).toBe(undici.buildConnector);
  });

  it("make a request through a pool exactly as pool.request does", async () => {
    const { createServer } = await import("node:http");
    const server = createServer((req, res) => res.end(`you asked for ${req.url}`));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as { port: number };
    const pool = new Pool(`http://127.0.0.1:${port}`);
    try {
      const viaPart = await request(pool, { method: "GET", path: "/part" });
      expect(viaPart.statusCode).toBe(200);
      expect(await viaPart.body.text()).toBe("you asked for /part");
      const viaIndex = await pool.request({ method: "GET", path: "/index" });
      expect(await viaIndex.body.text()).toBe("you asked for /index");
    } finally {
      await pool.close();
      server.close();
    }
  });
});
