import { randomBytes } from "node:crypto";
import * as zlib from "node:zlib";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkLater, checkRequest, MAX_VIEW_BYTES, type SecretCheck } from "../src/net-proxy/request-secrets.js";
import { decodedViews } from "../src/secrets/decoded-views.js";
import { Needles } from "../src/secrets/needles.js";
import { encodedForms, valuesInSecretText } from "../src/secrets/secret-values.js";
import { defaultRules, scanSecrets } from "../src/secrets/scan.js";
import { CARRIERS, ENCODINGS, encoded, fits, request } from "./encoded-variants.js";

/**
 * What the proxy decides about a request, with the secret re-encoded as a
 * command's shell tools would: every generated secret × encoding × carrier is
 * refused, and random data encoded the same ways is not (the false positives
 * are counted: 0).
 */
const RULES = defaultRules();
const rulesOnly: SecretCheck = { findSecrets: (t) => scanSecrets(t) };

function knownCheck(values: readonly string[]): SecretCheck {
  const from = new Map<string, string>();
  for (const v of values) for (const f of encodedForms(v)) from.set(f, "secrets/db_password.txt");
  return { findSecrets: (t) => scanSecrets(t), known: { needles: new Needles(from.keys()), from: (f) => from.get(f) } };
}

describe("a re-encoded secret in a plain-HTTP request", () => {
  it("is refused for every generated secret × encoding × alignment × carrier (chunks cut anywhere)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...RULES),
        fc.nat({ max: 9 }),
        fc.constantFrom(...ENCODINGS),
        fc.nat({ max: 2 }),
        fc.constantFrom(...CARRIERS),
        fc.array(fc.nat({ max: 100_000 }), { maxLength: 6 }),
        (rule, which, enc, lead, carrier, cuts) => {
          fc.pre(fits(enc, carrier));
          const secret = rule.examples[which % rule.examples.length]!;
          // Only the rule's own examples that the rules find as they are: the decoding is under test, not the rules.
          fc.pre(scanSecrets(`${" ".repeat(lead)}${secret}\n`).length > 0);
          const { head, body } = request(carrier, encoded(enc, secret, lead), cuts);
          const v = checkRequest(head, body, Buffer.alloc(0), rulesOnly);
          expect(v, `${rule.id} ${enc.name} lead ${lead} in ${carrier}`).toMatchObject({
            ok: false,
            rule: "net:secret",
          });
        },
      ),
      { numRuns: 1500 },
    );
  });

  it("is refused under the body's Content-Encoding (gzip, deflate, br, zstd) and a header naming it", () => {
    const gh = RULES.find((r) => r.id === "github-pat")!.examples[0]!;
    const bodies: [string, Buffer][] = [
      ["gzip", zlib.gzipSync(`token=${gh}`)],
      ["deflate", zlib.deflateSync(`token=${gh}`)],
      ["deflate", zlib.deflateRawSync(`token=${gh}`)],
      ["br", zlib.brotliCompressSync(`token=${gh}`)],
      ["zstd", zlib.zstdCompressSync(`token=${gh}`)],
      ["gzip, br", zlib.brotliCompressSync(zlib.gzipSync(`token=${gh}`))],
    ];
    for (const [coding, body] of bodies) {
      const head = Buffer.from(
        `POST /in HTTP/1.1\r\nHost: h.test\r\nContent-Encoding: ${coding}\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      expect(checkRequest(head, body, Buffer.alloc(0), rulesOnly), coding).toMatchObject({
        ok: false,
        rule: "net:secret",
      });
    }
  });

  it("is refused in a chunked body's trailers, and in a later request on the connection (the watched stretch)", () => {
    const gh = RULES.find((r) => r.id === "github-pat")!.examples[0]!;
    const b64 = Buffer.from(`t=${gh}`).toString("base64");
    const head = Buffer.from("POST /in HTTP/1.1\r\nHost: h.test\r\nTransfer-Encoding: chunked\r\n\r\n");
    const body = Buffer.from(`2\r\nok\r\n0\r\nX-Trailer: ${b64}\r\n\r\n`);
    expect(checkRequest(head, body, Buffer.alloc(0), rulesOnly)).toMatchObject({ ok: false, rule: "net:secret" });
    const later = Buffer.from(`POST /second HTTP/1.1\r\nHost: h.test\r\nContent-Length: ${b64.length}\r\n\r\n${b64}`);
    expect(checkLater(later, rulesOnly)).toMatchObject({ ok: false, rule: "net:secret" });
    expect(checkLater(Buffer.from("POST /second HTTP/1.1\r\n\r\naGVsbG8gd29ybGQ="), rulesOnly)).toEqual({ ok: true });
    // A compressed body in a later request arrives in pieces: refused whatever it holds, brotli and gzip alike.
    for (const coding of ["br", "gzip", "identity, zstd"]) {
      const body = zlib.brotliCompressSync(`t=${gh}`);
      const h = `POST /third HTTP/1.1\r\nHost: h.test\r\nContent-Encoding: ${coding}\r\nContent-Length: ${body.length}\r\n\r\n`;
      expect(checkLater(Buffer.concat([Buffer.from(h), body]), rulesOnly), coding).toMatchObject({
        ok: false,
        rule: "net:undecodable",
      });
    }
    expect(
      checkLater(
        Buffer.from("POST /x HTTP/1.1\r\nContent-Encoding: identity\r\nContent-Length: 2\r\n\r\nok"),
        rulesOnly,
      ),
    ).toEqual({ ok: true });
  });

  it("refuses what it cannot decode or would decode past its bound (an unknown coding, a gzip bomb, a lying header)", () => {
    const head = (coding: string, n: number) =>
      Buffer.from(`POST /in HTTP/1.1\r\nHost: h.test\r\nContent-Encoding: ${coding}\r\nContent-Length: ${n}\r\n\r\n`);
    const bomb = zlib.gzipSync(Buffer.alloc(MAX_VIEW_BYTES + 1024));
    for (const [coding, body] of [
      ["compress", Buffer.from("abc")],
      ["gzip", bomb],
      ["gzip", Buffer.from("not gzip at all")],
    ] as const)
      expect(checkRequest(head(coding, body.length), body, Buffer.alloc(0), rulesOnly), coding).toMatchObject({
        ok: false,
        rule: "net:undecodable",
      });
    // The same bomb with no header: found by its magic number inside the body, and refused as well.
    const raw = Buffer.from(`POST /in HTTP/1.1\r\nHost: h.test\r\nContent-Length: ${bomb.length}\r\n\r\n`);
    expect(checkRequest(raw, bomb, Buffer.alloc(0), rulesOnly)).toMatchObject({ ok: false, rule: "net:undecodable" });
  });

  it("refuses the exact value of a run's secret file in each encoding, though no rule knows its shape", () => {
    const value = "Zq8xK2mP9wLr4TbN-c4n4ry";
    expect(scanSecrets(value)).toEqual([]);
    const check = knownCheck(valuesInSecretText(`${value}\n`));
    fc.assert(
      fc.property(
        fc.constantFrom(...ENCODINGS),
        fc.nat({ max: 2 }),
        fc.constantFrom(...CARRIERS),
        fc.array(fc.nat({ max: 1000 }), { maxLength: 4 }),
        (enc, lead, carrier, cuts) => {
          fc.pre(fits(enc, carrier));
          const { head, body } = request(carrier, encoded(enc, value, lead), cuts);
          const v = checkRequest(head, body, Buffer.alloc(0), check);
          expect(v, `${enc.name} lead ${lead} in ${carrier}`).toMatchObject({ ok: false, rule: "net:secret" });
          expect(v.ok || v.why).toContain("secrets/db_password.txt");
        },
      ),
      { numRuns: 300 },
    );
  });

  it("lets through random data encoded the same ways, with and without known values: 0 false positives", () => {
    const check = knownCheck(["Zq8xK2mP9wLr4TbN-c4n4ry", "AKIAQWERTYUIOPASDFGH1234"]);
    let tried = 0;
    const refused: string[] = [];
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 8, maxLength: 3000 }),
        fc.constantFrom(...ENCODINGS),
        fc.constantFrom(...CARRIERS),
        fc.array(fc.nat({ max: 100_000 }), { maxLength: 6 }),
        (bytes, enc, carrier, cuts) => {
          fc.pre(fits(enc, carrier));
          tried++;
          const { head, body } = request(carrier, enc.encode(Buffer.from(bytes)), cuts);
          for (const c of [rulesOnly, check]) {
            const v = checkRequest(head, body, Buffer.alloc(0), c);
            if (!v.ok) refused.push(`${enc.name} in ${carrier}: ${v.why}`);
          }
        },
      ),
      { numRuns: 2000 },
    );
    expect(tried).toBeGreaterThan(1000);
    expect(refused).toEqual([]);
  });
});

describe("decoded views", () => {
  it("find base64 that starts after other characters of its alphabet, at each of the four offsets", () => {
    const gh = RULES.find((r) => r.id === "github-pat")!.examples[0]!;
    for (const prefix of ["", "/", "/a", "/ab", "/upload/v1/"]) {
      const t = Buffer.from(`${prefix}${Buffer.from(`k ${gh}\n`).toString("base64")}`);
      const v = decodedViews(t, { maxDepth: 1, maxBytes: 1 << 20 });
      expect(v.ok && v.texts.some((x) => x.includes(gh)), prefix).toBe(true);
    }
  });

  it("find an encoded secret wrapped in random bytes, at each layer (a binary upload, noise inside base64 or gzip)", () => {
    const gh = RULES.find((r) => r.id === "github-pat")!.examples[0]!;
    const inner = Buffer.from(` ${Buffer.from(`k ${gh}\n`).toString("base64")} `);
    const noisy = (b: Buffer) => Buffer.concat([randomBytes(20_000), b, randomBytes(20_000)]);
    for (const [name, data] of [
      ["binary around base64", noisy(inner)],
      ["base64 of noise around base64", Buffer.from(noisy(inner).toString("base64"))],
      ["gzip of noise around base64", zlib.gzipSync(noisy(inner))],
      ["noise around percent-encoding", noisy(Buffer.from(`t=${encodeURIComponent(`token=${gh}`)}&`))],
    ] as const) {
      const { head, body } = request("body", data);
      expect(checkRequest(head, body, Buffer.alloc(0), rulesOnly), name).toMatchObject({
        ok: false,
        rule: "net:secret",
      });
    }
  });

  it("stop at their byte bound instead of decoding on (base64 nested past it is over, not let through)", () => {
    let s = randomBytes(300_000).toString("base64");
    for (let i = 0; i < 3; i++) s = Buffer.from(s).toString("base64");
    expect(decodedViews(Buffer.from(s), { maxDepth: 3, maxBytes: 2 * s.length })).toMatchObject({ ok: false });
    expect(decodedViews(Buffer.from(s), { maxDepth: 3, maxBytes: 20 * s.length })).toMatchObject({ ok: true });
  });
});

describe("a secret file's values", () => {
  it("are the values of its assignments and bare lines, not names, comments or short words", () => {
    const text = [
      "# production settings",
      "NODE_ENV=production",
      "export DB_PASSWORD='pa55-W0rd-x9Zq8xK2'",
      '"client_secret": "9f8e7d6c5b4a39281706f5e4",',
      "PORT=3000",
      "just some words in a sentence",
      "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
      "ZmluYWxsaW5lb2ZhYmFzZTY0Ym9keQ==",
    ].join("\n");
    expect(valuesInSecretText(text)).toEqual([
      "pa55-W0rd-x9Zq8xK2",
      "9f8e7d6c5b4a39281706f5e4",
      "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
      "ZmluYWxsaW5lb2ZhYmFzZTY0Ym9keQ==",
    ]);
  });

  it("are found by the needle set wherever they are in a text, in each encoded form", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.string({ maxLength: 200 }), fc.nat({ max: 2 }), (a, b, lead) => {
        const value = "Zq8xK2mP9wLr4TbN-c4n4ry";
        const n = new Needles(encodedForms(value));
        const b64 = Buffer.concat([Buffer.from(a), Buffer.alloc(lead, 7), Buffer.from(value), Buffer.from(b)]).toString(
          "base64",
        );
        expect(n.firstIn(`${a}${value}${b}`)).toBeDefined();
        expect(n.firstIn(b64)).toBeDefined();
      }),
    );
  });
});
