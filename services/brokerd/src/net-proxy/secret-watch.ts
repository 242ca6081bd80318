import type { Socket } from "node:net";
import { Needles } from "../secrets/needles.js";
import { secretFileValues } from "../secrets/secret-file-values.js";
import { encodedForms } from "../secrets/secret-values.js";
import type { ConnectionRecord } from "./connection-record.js";
import { checkLater, type SecretCheck } from "./request-secrets.js";

// The proxy's secret checks beyond a connection's first request: the values it refuses to send,
// and the stream of a kept-alive plain-HTTP connection watched chunk by chunk.

/** How far back a later chunk's scan reaches, so a secret split across two chunks is still seen whole. */
const SCAN_OVERLAP = 16 * 1024;

/** A run's secret files (what its masks hide), as what the proxy refuses to send: each value in each form. */
export type SecretFiles = readonly { path: string; dir: boolean }[];

export function knownValues(files: SecretFiles): SecretCheck["known"] {
  const from = new Map<string, string>();
  for (const [value, path] of secretFileValues(files)) for (const f of encodedForms(value)) from.set(f, path);
  return from.size ? { needles: new Needles(from.keys()), from: (f) => from.get(f) } : undefined;
}

/**
 * What a plain-HTTP client sends after its first request (a second one on the same
 * connection) is checked chunk by chunk, with the end of the last chunk, and the
 * connection is cut before a chunk holding a secret is passed on.
 */
export function watchForSecrets(
  client: Socket,
  upstream: Socket,
  rec: ConnectionRecord,
  secretCheck: () => SecretCheck,
): void {
  let tail = "";
  client.on("data", (b: Buffer) => {
    const text = tail + b.toString("latin1");
    const v = checkLater(Buffer.from(text, "latin1"), secretCheck());
    if (!v.ok) {
      rec.rule = v.rule;
      rec.error = v.why;
      upstream.destroy();
      client.destroy();
      return;
    }
    tail = text.slice(-SCAN_OVERLAP);
    if (!upstream.write(b)) {
      client.pause();
      upstream.once("drain", () => client.resume());
    }
  });
  client.once("end", () => upstream.end());
  // Paused since the handshake: a pipe would resume it, a listener does not.
  client.resume();
}
