import { ToolDecision } from "@boxmaker/common";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createServer, type Server } from "node:http";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { rig, type Rig } from "./helpers.js";
import { htmlToText, isPrivateAddress, makeFetchUrl } from "../src/tools/fetch-url.js";
import { grepBlob, readBlob } from "../src/tools/blob-tools.js";

let server: Server;
let port = 0;
let r: Rig | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    if (req.url === "/page") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      res.end(
        "<html><head><title>Demo</title><style>p{}</style></head><body><h1>Hello &amp; welcome</h1>" +
          "<p>First <b>para</b> with <a href='https://example.org/x'>a link</a>.</p><script>evil()</script><ul><li>one</li><li>two</li></ul></body></html>",
      );
    } else if (req.url === "/redirect-local") {
      res.writeHead(302, { location: `http://127.0.0.1:${port}/page` });
      res.end();
    } else if (req.url === "/big") {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end(Array.from({ length: 3000 }, (_, i) => `line ${i} of a long log`).join("\n"));
    } else if (req.url === "/slow") {
      // Never answers: the tool's time limit must end it.
    } else {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not here");
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
});

/** Names the tests use; *.test never reaches real DNS. */
const resolve = async (host: string) => {
  if (host === "private.test") return [{ address: "10.0.0.5", family: 4 }];
  if (host.endsWith(".test")) return [{ address: "127.0.0.1", family: 4 }];
  throw new Error(`ENOTFOUND ${host}`);
};

async function fetchRig(): Promise<Rig> {
  const rr = await rig({
    fetch_url: { timeout_ms: 400, allow_private_hosts: ["allowed.test"] },
    policy: {
      rules: [
        { tool: "fetch_url", effect: "allow", hosts: ["allowed.test", "private.test", "127.0.0.1"] },
        { tool: "fetch_url", effect: "deny", hosts: ["denied.test"] },
      ],
    },
  });
  rr.broker.table.replaceOrigin("builtin", [readBlob, grepBlob, makeFetchUrl({ resolve })]);
  const found = await rr.call("find_tool", { query: "fetch a web page url" });
  expect(found.content).toContain("fetch_url");
  return rr;
}
const fetch = (rr: Rig, url: string) => rr.call("call_tool", { name: "fetch_url", arguments: { url } });

describe("fetch_url", () => {
  it("fetches an allowed host and turns HTML into readable text", async () => {
    r = await fetchRig();
    const res = await fetch(r, `http://allowed.test:${port}/page`);
    expect(res).toMatchObject({ decision: ToolDecision.ALLOWED, isError: false });
    expect(res.content).toContain(`http://allowed.test:${port}/page — HTTP 200, text/html`);
    expect(res.content).toContain("# Hello & welcome");
    expect(res.content).toContain("First para with a link (https://example.org/x).");
    expect(res.content).toContain("- one\n- two");
    expect(res.content).not.toMatch(/<|evil\(\)|p\{\}/);
    // The audit log is a write stream: wait for the call's line to reach the file.
    const auditFile = join(r.dir, "state", "audit.jsonl");
    await vi.waitFor(() => expect(readFileSync(auditFile, "utf8")).toContain('"resolved":"fetch_url"'));
    const audit = readFileSync(auditFile, "utf8");
    expect(audit).toMatch(/"tool":"call_tool","resolved":"fetch_url","decision":"allowed"/);
    // The audit line says where the call went.
    expect(audit).toMatch(/"resolved":"fetch_url".*"hosts":\["allowed\.test"\]/);
  });

  it("denies a host the policy denies, and keeps the default for others", async () => {
    r = await fetchRig();
    const denied = await fetch(r, `http://denied.test:${port}/page`);
    expect(denied.decision).toBe(ToolDecision.DENIED);
    // A host no rule names gets the network default: a person is asked.
    const unknown = await fetch(r, `http://other.test:${port}/page`);
    expect(unknown.decision).toBe(ToolDecision.STAGED);
  });

  it("refuses a redirect to 127.0.0.1 and a name that resolves to a private address", async () => {
    r = await fetchRig();
    const redirected = await fetch(r, `http://allowed.test:${port}/redirect-local`);
    expect(redirected.isError).toBe(true);
    expect(redirected.content).toMatch(
      /127\.0\.0\.1 resolves to 127\.0\.0\.1, a private, loopback or link-local address/,
    );
    const priv = await fetch(r, `http://private.test:${port}/page`);
    expect(priv.isError).toBe(true);
    expect(priv.content).toContain("private.test resolves to 10.0.0.5");
  });

  it("spills an oversized page to a blob and gives up on a page that never answers", async () => {
    r = await fetchRig();
    const big = await fetch(r, `http://allowed.test:${port}/big`);
    expect(big.isError).toBe(false);
    expect(big.blobSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(big.content).toContain(`blob:sha256:${big.blobSha256}`);
    expect(r.broker.blobs.get(big.blobSha256)).toContain("line 2999 of a long log");
    const t0 = Date.now();
    const slow = await fetch(r, `http://allowed.test:${port}/slow`);
    expect(slow.isError).toBe(true);
    expect(slow.content).toContain("took longer than 400 ms");
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it("classifies addresses and converts entities", () => {
    for (const a of [
      "127.0.0.1",
      "10.1.2.3",
      "172.20.0.1",
      "192.168.1.1",
      "169.254.169.254",
      "::1",
      "fe80::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "0.0.0.0",
    ]) {
      expect(isPrivateAddress(a), a).toBe(true);
    }
    for (const a of ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"]) expect(isPrivateAddress(a), a).toBe(false);
    expect(htmlToText("<p>a&nbsp;&lt;b&gt; &#x41;&#66;</p>")).toBe("a <b> AB");
  });
});
