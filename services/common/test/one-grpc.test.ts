// One gRPC implementation: grpc-js, behind grpc-server.ts and grpc-client.ts.
// Protocol code written by hand has the bugs a library does not (a call with
// no deadline, a status read wrong), so no source file under services/ may
// speak gRPC's wire itself. What counts as speaking it, each a regular
// expression over the file's text:
//  - an HTTP/2 client of its own: `http2.connect(`, or `connect` imported from node:http2;
//  - the 5-byte message prefix (flag byte, then a 4-byte big-endian length at offset 1)
//    written or read: `writeUInt32BE(n, 1)`, `readUInt32BE(1)`, `setUint32(1, …)`, `getUint32(1)`;
//  - the status read out of a reply's headers: `["grpc-status"]`, `["grpc-message"]`,
//    `.get("grpc-status")`, `.get("grpc-message")`.
// Generated code (src/gen), build output and dependencies are not looked at.
// Peers that break the protocol on purpose, to test the client against them,
// live outside services/ (test/support/hostile-h2.ts).
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { patternFindings, sourceFiles } from "../../../test/support/source-scan.js";
import { repoRoot } from "../../../test/support/stack.js";

const FRAMING: Record<string, RegExp> = {
  "an HTTP/2 client": /\bhttp2\.connect\s*\(|import\s*\{[^}]*\bconnect\b[^}]*\}\s*from\s*["'](node:)?http2["']/,
  "the 5-byte message prefix": /\b(write|read)UInt32BE\s*\(\s*(?:[^,()]+,\s*)?1\s*\)|\b(set|get)Uint32\s*\(\s*1\s*[,)]/,
  "the status read from headers":
    /\[\s*["'`]grpc-(status|message)["'`]\s*\]|\.get\(\s*["'`]grpc-(status|message)["'`]\s*\)/,
};

const self = relative(repoRoot, import.meta.filename);

const findings = patternFindings(FRAMING);

describe("one gRPC implementation", () => {
  it("the check sees each way of speaking the wire by hand (what the deleted client did)", () => {
    expect(findings('import { connect as connectHttp2, constants } from "node:http2";')).toEqual(["an HTTP/2 client"]);
    expect(findings("const s = http2.connect(url, opts);")).toEqual(["an HTTP/2 client"]);
    expect(findings("out.writeUInt32BE(message.length, 1);")).toEqual(["the 5-byte message prefix"]);
    expect(findings("const length = head.readUInt32BE(1);")).toEqual(["the 5-byte message prefix"]);
    expect(findings("view.setUint32(1, n, false)")).toEqual(["the 5-byte message prefix"]);
    expect(findings('const raw = ending?.["grpc-status"];')).toEqual(["the status read from headers"]);
    expect(findings("first(h['grpc-message'])")).toEqual(["the status read from headers"]);
    // What is not the wire: a server from node:http2, other offsets, a header sent.
    expect(
      findings('import { createServer } from "node:http2"; buf.writeUInt32BE(n, 0); ({ "grpc-status": "0" })'),
    ).toEqual([]);
  });

  it("no source file under services/ other than generated code speaks gRPC's wire itself", () => {
    const files = [...sourceFiles(join(repoRoot, "services"))]
      .map((f) => relative(repoRoot, f))
      .filter((f) => f !== self);
    // The walk reached the adapter, so an empty result means something.
    expect(files).toContain("services/common/src/grpc-client.ts");
    const offenders = files
      .map((f) => ({ file: f, found: findings(readFileSync(join(repoRoot, f), "utf8")) }))
      .filter((x) => x.found.length > 0);
    expect(offenders).toEqual([]);
  });
});
