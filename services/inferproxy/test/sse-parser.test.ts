import { describe, expect, it } from "vitest";
import { SseParser } from "../src/completion/sse-parser.js";
import { recording } from "./support/recordings.js";

const enc = new TextEncoder();

function feedInPieces(body: string, size: number): string[] {
  const bytes = enc.encode(body);
  const p = new SseParser();
  const out: string[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...p.push(bytes.subarray(i, i + size)));
  out.push(...p.end());
  return out;
}

describe("SseParser", () => {
  it("returns each event as soon as its blank line arrives", () => {
    const p = new SseParser();
    expect(p.pushText('data: {"a":1}\n')).toEqual([]);
    expect(p.pushText("\n")).toEqual(['{"a":1}']);
    expect(p.pushText("data: x\n\ndata: y\n\ndata: z")).toEqual(["x", "y"]);
    expect(p.end()).toEqual(["z"]);
  });

  it("handles CRLF, a CR split from its LF, comments, other fields and multi-line data", () => {
    const p = new SseParser();
    const out = [
      ...p.pushText(": keep-alive\r\nevent: message\r\ndata: one\r"),
      ...p.pushText("\n\r\ndata: a\ndata: b\nid: 7\n\ndata:nospace\n\n"),
    ];
    expect(out).toEqual(["one", "a\nb", "nospace"]);
  });

  it("keeps UTF-8 characters split across chunks intact", () => {
    const body = 'data: {"content":"принима 톨 ประเทศไทย"}\n\n';
    for (const size of [1, 2, 3, 5]) expect(feedInPieces(body, size)).toEqual(['{"content":"принима 톨 ประเทศไทย"}']);
  });

  it("gives the same events for a recorded stream however the bytes are cut", () => {
    const body = recording("reasoning-stream-with-control").response.body;
    const whole = feedInPieces(body, body.length * 4);
    expect(whole.length).toBe(154);
    expect(whole.at(-1)).toContain('"error"');
    for (const size of [1, 7, 64, 1000]) expect(feedInPieces(body, size)).toEqual(whole);
  });
});
