import { contentDecoded, decodedViews } from "../secrets/decoded-views.js";
import type { Needles } from "../secrets/needles.js";
import { dechunked, MAX_INSPECTED_BODY, requestTexts } from "./forward-body.js";

/**
 * Whether a plain-HTTP request may go out, as far as secrets go: its URL,
 * headers and body, with the chunks joined, the Content-Encoding undone and
 * every encoding a command could have wrapped a secret in decoded
 * (secrets/decoded-views.ts), run through the recognition rules and looked
 * through for the exact values of the run's secret files. Pure.
 */
export interface SecretCheck {
  /** Recognised secrets in a text (the rules, less what the operator allowed). */
  findSecrets(text: string): readonly { rule: string }[];
  /** The values of the run's secret files, in their encoded forms; what each came from. */
  known?: { needles: Needles; from(value: string): string | undefined };
}

export type RequestVerdict = { ok: true } | { ok: false; rule: "net:secret" | "net:undecodable"; why: string };

/** Layers of encoding undone below the request: gzip in base64 in a percent-encoded form is three. */
const MAX_DEPTH = 3;
/**
 * All views of one request together. A body of base64 at the inspected maximum
 * decodes at four starts to three times its size: this leaves room for that
 * and for a layer below it, and bounds the scan at a few seconds (npm run bench).
 */
export const MAX_VIEW_BYTES = 6 * MAX_INSPECTED_BODY;

function header(head: string, name: string): string[] {
  return head
    .split("\r\n")
    .slice(1)
    .filter((l) => l.slice(0, l.indexOf(":")).trim().toLowerCase() === name)
    .flatMap((l) =>
      l
        .slice(l.indexOf(":") + 1)
        .split(",")
        .map((v) => v.trim().toLowerCase()),
    )
    .filter(Boolean);
}

/**
 * The first request on a connection: `head` (origin-form), its `body` as read
 * (chunked framing included) and `rest`, what the client sent after it.
 */
export function checkRequest(head: Buffer, body: Buffer, rest: Buffer, check: SecretCheck): RequestVerdict {
  const headText = head.toString("latin1");
  let payload = header(headText, "transfer-encoding").includes("chunked") ? dechunked(body) : body;
  const codings = header(headText, "content-encoding");
  if (codings.length) {
    const d = contentDecoded(payload, codings, MAX_VIEW_BYTES);
    if (typeof d === "string") return { ok: false, rule: "net:undecodable", why: `the request has ${d}` };
    payload = d;
  }
  return checkTexts(head, Buffer.concat([payload, rest]), check);
}

/** A Content-Encoding header line in a stretch of a later request, and what it names. */
const CODING_HEADER = /\r\ncontent-encoding[ \t]*:[ \t]*([^\r\n]*)/gi;

/**
 * A stretch of what a client sends after its first request (the scan window of
 * `watchForSecrets`). A later request whose body is compressed is refused: its
 * body arrives in pieces, and a piece of a deflate stream cannot be inflated
 * without the rest (a gzip stream that starts in the stretch is inflated as far
 * as it goes, like any other).
 */
export function checkLater(window: Buffer, check: SecretCheck): RequestVerdict {
  for (const m of window.toString("latin1").matchAll(CODING_HEADER)) {
    const codings = m[1]!.split(",").map((c) => c.trim().toLowerCase());
    if (codings.some((c) => c && c !== "identity"))
      return {
        ok: false,
        rule: "net:undecodable",
        why: `a later request on the connection has a compressed body (Content-Encoding: ${m[1]!.slice(0, 40)}), which the proxy sees only in pieces and cannot decode whole; send it as the first request of a new connection`,
      };
  }
  return checkTexts(window, Buffer.alloc(0), check);
}

function checkTexts(head: Buffer, body: Buffer, check: SecretCheck): RequestVerdict {
  const views = decodedViews(Buffer.concat([head, body]), { maxDepth: MAX_DEPTH, maxBytes: MAX_VIEW_BYTES });
  if (!views.ok) return { ok: false, rule: "net:undecodable", why: `the request has ${views.why}` };
  // requestTexts' own views: the body as UTF-8 and the query a parameter per line (what line rules need).
  const texts = [...new Set([...requestTexts(head, body), ...views.texts])];
  const rules = texts.flatMap((t) => check.findSecrets(t).map((f) => f.rule));
  if (rules.length)
    return {
      ok: false,
      rule: "net:secret",
      why:
        `the request carries a secret (${[...new Set(rules)].join(", ")}) in its URL, headers or body, as it is or encoded; ` +
        "the proxy does not send recognised secrets out (an operator lets a false positive through with secrets.allow)",
    };
  if (check.known)
    for (const t of texts) {
      const hit = check.known.needles.firstIn(t);
      if (hit !== undefined)
        return {
          ok: false,
          rule: "net:secret",
          why: `the request carries the value of the secret file ${check.known.from(hit) ?? "(unknown)"}, as it is or encoded; the proxy does not send a secret file's content out`,
        };
    }
  return { ok: true };
}
