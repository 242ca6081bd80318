import { Metadata } from "@grpc/grpc-js";
import type * as grpc from "@grpc/grpc-js";
import { clone } from "@bufbuild/protobuf";
import { ERROR_DETAILS_TRAILER, type RpcError, encodeErrorDetails, toRpcError } from "./errors.js";
import { type ErrorDetails, ErrorDetailsSchema } from "./gen/boxmaker/v1/errors_pb.js";

/**
 * The status a handler's failure ends its call with, bounded. Every error
 * reply carries its message (grpc-message, percent-encoded) and its details
 * trailer (base64) in one HTTP/2 header block, and a peer drops the whole
 * connection, not the one call, when a block passes its limit (a 64 kB
 * trailer does it to this grpc-js: error-details.test.ts): a message echoing a 200 kB id that one client sent would fail
 * every other call on that connection (loopd's one connection to brokerd
 * carries every session's tool calls). So the message is cut to
 * MAX_MESSAGE_BYTES as encoded and the details to MAX_DETAILS_BYTES: the
 * whole block stays under 8 KiB, whatever any handler threw.
 */
export function errorReply(err: unknown): Partial<grpc.StatusObject> {
  const e = toRpcError(err);
  const metadata = new Metadata();
  const details = encodeErrorDetails(boundedDetails(e.wireDetails()));
  if (details.length > 0) metadata.set(ERROR_DETAILS_TRAILER, Buffer.from(details));
  return { code: e.status, details: replyMessage(e), metadata };
}

function replyMessage(e: RpcError): string {
  return cutToBytes(e.message, MAX_MESSAGE_BYTES, "…", grpcMessageBytes) ?? "";
}

const MAX_MESSAGE_BYTES = 2_000;
/** As binary; base64 makes it 3,000 bytes in the header block. */
const MAX_DETAILS_BYTES = 2_250;
const MAX_STRING_BYTES = 1_000;
/** A string field's tag and length prefix, at most (lengths under 16 KiB). */
const FIELD_OVERHEAD = 4;

/**
 * The string fields in the order they are kept when the details would not
 * fit: what a caller acts on first, the cause (for people) last. The numbers
 * and the reason are a few dozen bytes and always kept.
 */
const STRING_FIELDS = [
  "errorCode",
  "field",
  "model",
  "upstream",
  "upstreamType",
  "errno",
  "completionId",
  "livenessReason",
  "cause",
] as const satisfies readonly (keyof ErrorDetails)[];

/** `d` with each string cut to MAX_STRING_BYTES (marked "...") and dropped or cut further where the whole would not fit. */
export function boundedDetails(d: ErrorDetails): ErrorDetails {
  const out = clone(ErrorDetailsSchema, d);
  for (const k of STRING_FIELDS) out[k] = "";
  let size = encodeErrorDetails(out).length;
  for (const k of STRING_FIELDS) {
    const v = d[k];
    if (!v) continue;
    const cut = cutToBytes(v, Math.min(MAX_STRING_BYTES, MAX_DETAILS_BYTES - size - FIELD_OVERHEAD), "...", utf8Bytes);
    if (cut === undefined || cut === "") continue;
    out[k] = cut;
    size = encodeErrorDetails(out).length;
  }
  return out;
}

const utf8Bytes = (s: string) => Buffer.byteLength(s);

/** Bytes of `s` as grpc-message carries it: printable ASCII but "%" as is, the rest as %XX per UTF-8 byte. */
function grpcMessageBytes(s: string): number {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    n += c >= 0x20 && c <= 0x7e && c !== 0x25 ? 1 : 3 * Buffer.byteLength(ch);
  }
  return n;
}

/** `s`, or its start and `tail` when it measures more than `max` bytes; undefined when not even that fits. */
function cutToBytes(s: string, max: number, tail: string, bytes: (s: string) => number): string | undefined {
  if (bytes(s) <= max) return s;
  const budget = max - bytes(tail);
  if (budget < 0) return undefined;
  let n = 0;
  let end = 0;
  for (const ch of s) {
    const w = bytes(ch);
    if (n + w > budget) break;
    n += w;
    end += ch.length;
  }
  return `${s.slice(0, end)}${tail}`;
}
