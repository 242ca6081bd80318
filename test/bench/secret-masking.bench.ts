// What recognising secrets by content costs each tool result (capForSession
// masks every result before it is capped): the scan over 1 MiB of four kinds
// of text, median of 7 runs each. Source code that mentions keys and tokens is
// the common case, output with no rule's keyword the cheap one, and output in
// which every line says "secret" the worst (the KEY=value rule walks each line).
// A megabyte of base64 on one line (a body as `base64 -w0` prints it) is where
// `key` and `ey` turn up by chance: scanned around each, not as one long line.
// The proxy_ figures are the network proxy's check of a request body of the
// same size: the rules over the body and over each view its encodings decode to.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gzipSync } from "node:zlib";
import { checkRequest } from "../../services/brokerd/dist/net-proxy/request-secrets.js";
import { maskSecrets, scanSecrets } from "../../services/brokerd/dist/secrets/scan.js";
import { p50 } from "./stats.mjs";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 60;

const MIB = 1024 * 1024;

function msFor(text: string): number {
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    maskSecrets(text, scanSecrets(text));
    times.push(performance.now() - t0);
  }
  return p50(times);
}

/**
 * What the network proxy spends on a plain-HTTP request's body before it goes
 * out: the rules over it and over every view its encodings decode to
 * (net-proxy/request-secrets.ts), per MiB of body as sent.
 */
function proxyMsFor(body: Buffer, headers = ""): number {
  const head = Buffer.from(`POST /in HTTP/1.1\r\nHost: h.test\r\n${headers}Content-Length: ${body.length}\r\n\r\n`);
  const check = { findSecrets: (t: string) => scanSecrets(t) };
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t0 = performance.now();
    const v = checkRequest(head, body, Buffer.alloc(0), check);
    times.push(performance.now() - t0);
    if (!v.ok) throw new Error(`the bench's innocent body was refused: ${v.why}`);
  }
  return (p50(times) * MIB) / body.length;
}

export default async function (emit: Emit): Promise<void> {
  const ts = createRequire(import.meta.url).resolve("typescript/lib/typescript.js");
  const source = readFileSync(ts, "utf8").slice(0, MIB);
  scanSecrets(source.slice(0, 4096)); // compiles the rules once, outside the figures
  emit("source_ms_per_mib", msFor(source), "ms");
  emit("no_keyword_ms_per_mib", msFor("line of output with nothing to see here\n".repeat(MIB / 40)), "ms");
  emit("keyword_every_line_ms_per_mib", msFor("line of output with no secret at all here\n".repeat(MIB / 42)), "ms");
  emit("base64_one_line_ms_per_mib", msFor(randomBytes((MIB * 3) / 4).toString("base64")), "ms");
  const text = Buffer.from(source);
  const noise = randomBytes((MIB * 3) / 4).toString("base64");
  emit("proxy_text_body_ms_per_mib", proxyMsFor(text), "ms");
  emit("proxy_base64_one_line_body_ms_per_mib", proxyMsFor(Buffer.from(noise)), "ms");
  emit("proxy_base64_wrapped_body_ms_per_mib", proxyMsFor(Buffer.from(noise.replace(/(.{76})/g, "$1\n"))), "ms");
  emit("proxy_gzip_body_ms_per_mib", proxyMsFor(gzipSync(text), "Content-Encoding: gzip\r\n"), "ms");
}
