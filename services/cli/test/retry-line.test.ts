import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { SessionEventSchema } from "@boxmaker/common/client";
import type { MessageInitShape } from "@bufbuild/protobuf";

type EventInit = MessageInitShape<typeof SessionEventSchema>["event"];
import { TurnRenderer } from "../src/render/turn-renderer.js";
import { styleFor } from "../src/render/style.js";

const plain = styleFor({ isTTY: false } as NodeJS.WriteStream, { NO_COLOR: "1" });

/** A renderer writing to strings; the events are played in order. */
function render(events: EventInit[]): string {
  const out = new PassThrough();
  const err = new PassThrough() as unknown as NodeJS.WriteStream;
  let text = "";
  out.on("data", (b: Buffer) => (text += b.toString()));
  const r = new TurnRenderer({ out, err, style: plain, showReasoning: false });
  for (const [i, e] of events.entries())
    r.handle(create(SessionEventSchema, { sessionId: "s", seq: BigInt(i + 1), event: e }));
  r.finish();
  return text;
}

const waiting = {
  case: "retry" as const,
  value: {
    phase: "waiting",
    attempt: 1,
    maxAttempts: 5,
    code: "UNAVAILABLE",
    reason: "llama-server at unix:/run/boxmaker/llama.sock dropped the stream mid-completion: other side closed",
    discardedContentChars: 12,
    discardedReasoningTokens: 3,
  },
};
const resent = {
  case: "retry" as const,
  value: { phase: "resent", attempt: 1, maxAttempts: 5, waitedMs: 10_240, promptCached: 0, promptReread: 5321 },
};

describe("the retry line", () => {
  it("is one line: why the reply was cut, what shown is discarded, and what coming back cost", () => {
    const text = render([
      { case: "reasoning", value: { text: "hm" } },
      { case: "content", value: { text: "Hello, world" } },
      waiting,
      resent,
      { case: "content", value: { text: "Hello again." } },
    ]);
    const lines = text.split("\n");
    const retry = lines.filter((l) => l.includes("↻"));
    expect(retry).toHaveLength(1);
    expect(retry[0]).toBe(
      "↻ the model request was cut off (UNAVAILABLE: llama-server at unix:/run/boxmaker/llama.sock dropped the stream mid-completion: other side closed); " +
        "the 12 characters of reply and 3 tokens of thinking shown above are discarded; sending it again once the server is back (retry 1 of 5)" +
        " — back after 10.2 s: its prompt cache was lost, 5,321 prompt tokens read again",
    );
    // The cut reply stays where it was, on its own line; the new one starts after the retry line.
    expect(lines[lines.indexOf(retry[0]!) - 1]).toBe("Hello, world");
    expect(lines[lines.indexOf(retry[0]!) + 1]).toBe("Hello again.");
  });

  it("a retry that still found a cache says how much of the prompt it kept", () => {
    const text = render([
      { ...waiting, value: { ...waiting.value, discardedContentChars: 0, discardedReasoningTokens: 0 } },
      { ...resent, value: { ...resent.value, promptCached: 1200, promptReread: 30 } },
    ]);
    expect(text).not.toContain("discarded");
    expect(text).toContain(" — back after 10.2 s: 30 prompt tokens read again (1,200 tokens still cached)\n");
  });

  it("says how long the server is waited for and how to stop waiting, when loopd says", () => {
    const text = render([{ ...waiting, value: { ...waiting.value, waitMs: 120_000 } }, resent]);
    expect(text).toContain(
      "; sending it again once the server is back, waiting up to 2 min for it (retry 1 of 5; Ctrl-C stops the turn) — back after 10.2 s",
    );
  });

  it("a retry that never got an answer ends its line before whatever ends the turn", () => {
    const text = render([waiting, { case: "turnFailed", value: { code: "UNAVAILABLE", message: "gone" } }]);
    expect(text.split("\n").filter(Boolean)).toEqual([
      expect.stringMatching(/^↻ .*\(retry 1 of 5\)$/),
      "turn failed: UNAVAILABLE: gone",
    ]);
  });
});
