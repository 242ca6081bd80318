import { ToolDecision } from "@boxmaker/common";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createServer, type Server } from "node:http";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isIP, type AddressInfo } from "node:net";
import { rig, type Rig } from "./helpers.js";
import fc from "fast-check";
import { makeFetchUrl } from "../src/tools/fetch-url.js";
import { isPrivateAddress } from "../src/policy/public-address.js";
import { htmlToText } from "../src/tools/html-text.js";
import { ToolError } from "../src/errors.js";
import { canonicalHost } from "../src/policy/hosts.js";
import { decide } from "../src/policy/rules.js";
import type { Plan, ToolContext } from "../src/tool-table.js";
import type { PolicyRule } from "../src/config-types.js";
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

/** Generated inputs of the spelling properties below; printed at the end. */
const spelled = { hosts: 0, reached: 0, addresses: 0, public: 0 };
afterAll(() => {
  console.log(
    `[fetch_url spellings] host spellings=${spelled.hosts} reached a denied host=${spelled.reached} ` +
      `special addresses=${spelled.addresses} treated public=${spelled.public}`,
  );
});

const FULLWIDTH_DOTS = ["\u3002", "\uff0e", "\uff61"];
/** Ways of writing one host in a URL that the WHATWG parser, DNS and the server all read as that host. */
function hostSpellingArb(host: string): fc.Arbitrary<string> {
  const labels = host.split(".");
  const char = (c: string) =>
    fc.constantFrom("same", "upper", "pct", "PCT", "wide").map((how) => {
      if (!/[a-z0-9-]/.test(c)) return how === "upper" ? c.toUpperCase() : c;
      if (how === "upper") return c.toUpperCase();
      if (how === "pct") return `%${c.charCodeAt(0).toString(16)}`;
      if (how === "PCT") return `%${c.charCodeAt(0).toString(16).toUpperCase()}`;
      if (how === "wide" && /[a-z]/.test(c)) return String.fromCharCode(c.charCodeAt(0) - 0x61 + 0xff41);
      return c;
    });
  const label = (l: string) => fc.tuple(...[...l].map(char)).map((cs) => cs.join(""));
  const dot = fc.constantFrom(".", ".", "%2E", "%2e", ...FULLWIDTH_DOTS);
  return fc
    .tuple(fc.tuple(...labels.map(label)), fc.array(dot, { minLength: labels.length, maxLength: labels.length }))
    .chain(([ls, dots]) =>
      fc
        .constantFrom("", ".", "%2E")
        .map((trail) => ls.map((l, i) => (i === 0 ? l : `${dots[i]}${l}`)).join("") + trail),
    );
}

function urlSpellingArb(host: string, port?: number): fc.Arbitrary<string> {
  return fc
    .record({
      scheme: fc.constantFrom("http", "HTTP", "https"),
      user: fc.constantFrom("", "", "user@", "u:p@"),
      host: hostSpellingArb(host),
      port: port ? fc.constant(`:${port}`) : fc.constantFrom("", ":80", ":443", ":8080"),
      path: fc.constantFrom("/", "/page", "/x?y=1#z", ""),
    })
    .map(({ scheme, user, host: h, port: p, path }) => `${scheme}://${user}${h}${p}${path}`);
}

const DENIED_HOSTS = ["denied.test", "api.denied-zone.test", "bücher.test"];
const hostRules: PolicyRule[] = [
  { tool: "fetch_url", effect: "allow" },
  {
    name: "no-denied",
    tool: "fetch_url",
    effect: "deny",
    hosts: ["denied.test", "*.denied-zone.test", "BÜCHER.test."],
  },
];

describe("fetch_url host rules hold for every spelling of a host", () => {
  it("no generated spelling of a denied host is allowed by the policy", () => {
    const tool = makeFetchUrl({ resolve });
    for (const host of [...DENIED_HOSTS, "xn--bcher-kva.test"]) {
      fc.assert(
        fc.property(urlSpellingArb(host), (url) => {
          spelled.hosts++;
          let hosts: string[];
          try {
            hosts = (tool.plan({ url }, {} as ToolContext) as Plan).hosts ?? [];
          } catch (err) {
            return err instanceof ToolError; // not a URL fetch_url takes: nothing is fetched
          }
          const d = decide(
            [...hostRules],
            { read: "allow", write: "ask", exec: "ask", network: "allow" },
            {
              tool: "fetch_url",
              risk: "network",
              paths: [],
              hosts,
            },
          );
          if (d.effect !== "deny") spelled.reached++;
          return d.effect === "deny";
        }),
        { numRuns: 400 },
      );
    }
    expect(spelled.reached).toBe(0);
  });

  it("against a real server: denied spellings never arrive, allowed ones do", async () => {
    let hits = 0;
    const counting = createServer((_req, res) => {
      hits++;
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("reached");
    });
    counting.listen(0, "127.0.0.1");
    await once(counting, "listening");
    const p = (counting.address() as AddressInfo).port;
    try {
      r = await rig({
        fetch_url: { timeout_ms: 2000, allow_private_hosts: [...DENIED_HOSTS, "allowed.test"] },
        policy: { rules: hostRules },
      });
      r.broker.table.replaceOrigin("builtin", [readBlob, grepBlob, makeFetchUrl({ resolve })]);
      await r.call("find_tool", { query: "fetch a web page url" });
      const rr = r;
      const sample = (host: string) =>
        fc.sample(
          urlSpellingArb(host, p).filter((u) => !u.startsWith("https")),
          25,
        );
      for (const url of DENIED_HOSTS.flatMap(sample)) {
        spelled.hosts++;
        const out = await fetch(rr, url);
        expect(out.decision === ToolDecision.DENIED || out.isError, url).toBe(true);
      }
      expect(hits).toBe(0);
      // The same spellings of a host no rule denies do reach the server: the rig can fail.
      for (const url of sample("allowed.test").filter((u) => !/@/.test(u))) {
        expect((await fetch(rr, url)).content, url).toContain("reached");
      }
      expect(hits).toBeGreaterThan(0);
    } finally {
      counting.closeAllConnections();
      counting.close();
    }
  }, 60_000);

  it("canonicalises hosts the way the URL parser and DNS read them", () => {
    for (const [spelling, canonical] of [
      ["BLOCKED.test.", "blocked.test"],
      ["blocked%2Etest", "blocked.test"],
      ["blocked\u3002test", "blocked.test"],
      ["\uff42locked.test", "blocked.test"],
      ["bücher.test", "xn--bcher-kva.test"],
      ["user:pw@Blocked.Test:8080", "blocked.test"],
      ["http://u@blocked.test:80/x", "blocked.test"],
      ["[::FFFF:127.0.0.1]:443", "::ffff:7f00:1"],
      ["0x7f.1", "127.0.0.1"],
      ["2130706433", "127.0.0.1"],
    ]) {
      expect(canonicalHost(spelling!), spelling).toBe(canonical);
    }
  });
});

/** Special-purpose IPv4 blocks (IANA registry), written here rather than taken from ipaddr.js. */
const SPECIAL_V4: Array<[string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];
/** IPv6 blocks that are not global unicast and carry no IPv4 address. */
const SPECIAL_V6: Array<[string, number]> = [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
  ["100::", 64],
  ["2001:2::", 48],
  ["2001:10::", 28],
  ["2001:20::", 28],
  ["2001:db8::", 32],
  ["3fff::", 20],
  ["5f00::", 16],
  ["64:ff9b:1::", 48],
  ["4000::", 2],
  ["8000::", 2],
];

const toV4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
const v4Num = (a: string) => a.split(".").reduce((n, o) => n * 256 + Number(o), 0);
const inV4 = ([net, bits]: [string, number]) =>
  fc.nat({ max: 2 ** (32 - bits) - 1 }).map((host) => toV4(v4Num(net) + host));
const v4Arb = fc.oneof(...SPECIAL_V4.map(inV4));

function v6Groups(addr: string): number[] {
  const [head, tail] = addr.split("::") as [string, string | undefined];
  const parse = (s: string | undefined) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = parse(tail);
  return tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill(0), ...t];
}
const inV6 = ([net, bits]: [string, number]) =>
  fc.array(fc.nat({ max: 0xffff }), { minLength: 8, maxLength: 8 }).map((rand) => {
    const g = v6Groups(net);
    return g.map((v, i) => {
      const keep = Math.max(0, Math.min(16, bits - i * 16));
      const mask = keep === 0 ? 0 : (0xffff << (16 - keep)) & 0xffff;
      return (v & mask) | (rand[i]! & ~mask & 0xffff);
    });
  });

/** One IPv6 address in a chosen spelling: compressed or full, case, leading zeros. */
function spellV6(groups: number[], how: { upper: boolean; zeros: boolean; compress: boolean }): string {
  const parts = groups.map((g) => {
    const h = g.toString(16);
    const s = how.zeros ? h.padStart(4, "0") : h;
    return how.upper ? s.toUpperCase() : s;
  });
  if (how.compress) {
    const text = parts.join(":");
    const runs = [...`:${text}:`.matchAll(/(:0+)+:/g)].sort((a, b) => b[0].length - a[0].length);
    if (runs[0]) return `:${text}:`.replace(runs[0][0], "::").replace(/^:(?!:)|(?<!:):$/g, "");
  }
  return parts.join(":");
}
const spellingArb = fc.record({ upper: fc.boolean(), zeros: fc.boolean(), compress: fc.boolean() });

/** A private IPv4 address carried inside an IPv6 one, in the forms that reach it. */
const embeddedArb = fc
  .tuple(
    v4Arb,
    fc.constantFrom(
      "mapped",
      "mapped-dotted",
      "siit",
      "compat",
      "nat64",
      "nat64-dotted",
      "6to4",
      "teredo-server",
      "teredo-client",
    ),
    spellingArb,
    fc.nat({ max: 0xffff }),
  )
  .map(([v4, form, how, r]) => {
    const n = v4Num(v4);
    const hi = n >>> 16;
    const lo = n & 0xffff;
    if (form === "mapped-dotted") return `::${how.upper ? "FFFF" : "ffff"}:${v4}`;
    if (form === "nat64-dotted") return `64:ff9b::${v4}`;
    const groups: Record<string, number[]> = {
      mapped: [0, 0, 0, 0, 0, 0xffff, hi, lo],
      siit: [0, 0, 0, 0, 0xffff, 0, hi, lo],
      compat: [0, 0, 0, 0, 0, 0, hi, lo],
      nat64: [0x64, 0xff9b, 0, 0, 0, 0, hi, lo],
      "6to4": [0x2002, hi, lo, r, 0, 0, 0, 1],
      "teredo-server": [0x2001, 0, hi, lo, 0x8000, r, 0xf7f7, 0xf7f7],
      "teredo-client": [0x2001, 0, 0x0808, 0x0808, 0x8000, r, hi ^ 0xffff, lo ^ 0xffff],
    };
    return spellV6(groups[form]!, how);
  });

describe("fetch_url reaches only public unicast addresses", () => {
  it("no generated address in a special range, or embedding one, is treated as public", () => {
    const odd = ["127.1", "0177.0.0.1", "2130706433", "0x7f000001", "fe80::1%eth0", "::ffff:127.0.0.1%lo", ""];
    const special = fc.oneof(
      v4Arb,
      fc.tuple(fc.oneof(...SPECIAL_V6.map(inV6)), spellingArb).map(([g, how]) => spellV6(g, how)),
      embeddedArb,
      fc.constantFrom(...odd),
    );
    fc.assert(
      fc.property(special, (addr) => {
        spelled.addresses++;
        if (!isPrivateAddress(addr)) spelled.public++;
        // Generated spellings are addresses a resolver could return, not strings refused for being malformed.
        return (odd.includes(addr) || isIP(addr) !== 0) && isPrivateAddress(addr);
      }),
      { numRuns: 3000 },
    );
    expect(spelled.public).toBe(0);
    // Public addresses, and the same embeddings of them, stay reachable: the check is not "refuse all".
    for (const a of [
      "8.8.8.8",
      "1.1.1.1",
      "2606:4700::1111",
      "2a00:1450:4001::8a",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
    ])
      expect(isPrivateAddress(a), a).toBe(false);
    for (const a of ["2002:808:808::1", "2001:0:808:808:8000:0:f7f7:f7f7"]) expect(isPrivateAddress(a), a).toBe(false);
  });

  it("a name resolving to an embedded private address is refused before any connection", async () => {
    const sample = fc.sample(embeddedArb, 20);
    r = await rig({
      fetch_url: { timeout_ms: 2000, allow_private_hosts: [] },
      policy: { rules: [{ tool: "fetch_url", effect: "allow" }] },
    });
    const byName = new Map(sample.map((a, i) => [`h${i}.test`, a]));
    r.broker.table.replaceOrigin("builtin", [
      readBlob,
      grepBlob,
      makeFetchUrl({ resolve: async (h) => [{ address: byName.get(h)!, family: 6 }] }),
    ]);
    await r.call("find_tool", { query: "fetch a web page url" });
    for (const [name, addr] of byName) {
      const out = await fetch(r, `http://${name}:${port}/page`);
      expect(out.content, addr).toMatch(/a private, loopback or link-local address/);
    }
  });

  it("a DNS lookup that never answers ends at the fetch's time limit", async () => {
    let seen: AbortSignal | undefined;
    r = await rig({
      fetch_url: { timeout_ms: 300, allow_private_hosts: [] },
      policy: { rules: [{ tool: "fetch_url", effect: "allow" }] },
    });
    r.broker.table.replaceOrigin("builtin", [
      readBlob,
      grepBlob,
      makeFetchUrl({
        resolve: (_h, signal) => {
          seen = signal;
          return new Promise(() => {}); // a resolver that never answers
        },
      }),
    ]);
    await r.call("find_tool", { query: "fetch a web page url" });
    const out = await fetch(r, "http://silent-dns.example/");
    expect(out.isError).toBe(true);
    expect(out.content).toContain("took longer than 300 ms");
    expect(seen?.aborted).toBe(true);
  });
});
