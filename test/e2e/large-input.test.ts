import { describe, expect, it } from "vitest";
import { BrokerService, createClient } from "@boxmaker/common";
import { countTokens } from "@boxmaker/llama-sim";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";
import { BURIED_ERROR, buildLog, sourceFile } from "../fixtures/large/generate.mjs";

type Msg = { role: string; content: string };
const messagesOf = (r: { body: unknown }) => (r.body as { messages: Msg[] }).messages;

/** A ~300 KB log: the fixture's 4,000 lines, padded out with more of the same. */
const log300k = (): string => {
  const base = buildLog() as string;
  const lines = base.split("\n");
  const extra = lines.filter((l) => !l.includes("ERROR") && l.startsWith("2026")).slice(0, 600);
  return [...extra, ...lines].join("\n");
};

describe("large input through the whole stack (simulator)", () => {
  const t = useStack("bxli-", { sim: { nCtx: 16384 }, loopd: { max_tokens: 512 } });

  it("a 300 KB log piped into run gets an answer, the session takes three more messages, and the model can grep the rest", async () => {
    const log = log300k();
    expect(Buffer.byteLength(log)).toBeGreaterThan(300_000);
    const r = await t.stack.cli(["run", "-"], { input: `What failed here?\n\n${log}`, timeoutMs: 60_000 });
    expect(r.code, r.stderr).toBe(0);
    const shown = r.stdout + r.stderr;
    expect(shown).toMatch(/input: a log block of \d+\.\d KB \(\d+ lines\) went to blob:sha256:[0-9a-f]{12}…/);
    expect(shown).toContain("1 input block spilled");
    const id = /session (\S+)/.exec(r.stderr)![1]!;

    // The stored message is the excerpt: the ERROR line verbatim, the pointer, the question.
    const h = await t.client.getSession({ id });
    const first = JSON.parse(h.messages[0]!.messageJson) as Msg;
    expect(first.content.startsWith("What failed here?\n\n[Boxmaker input: log")).toBe(true);
    expect(first.content).toContain(BURIED_ERROR);
    expect(Buffer.byteLength(first.content)).toBeLessThan(10_000);
    const blob = /blob:sha256:[0-9a-f]{64}/.exec(first.content)![0];

    for (const q of ["which batch?", "which worker?", "anything else?"]) {
      expect(doneOf(await turn(t.client, id, q)).finishReason).toBe("stop");
    }
    // The model greps the whole log through the pointer.
    t.stack.sim.enqueue({
      toolCalls: [
        {
          name: "call_tool",
          arguments: JSON.stringify({
            name: "grep_blob",
            arguments: { blob, pattern: "SerializationFailure", context: 0 },
          }),
        },
      ],
    });
    t.stack.sim.enqueue({ content: "It is a serialization failure." });
    const ev = await turn(t.client, id, "grep the log for the exception");
    const result = ev.flatMap((e) => (e.event.case === "toolResult" ? [e.event.value] : []))[0]!;
    expect(result.isError, result.content).toBe(false);
    expect(result.content).toContain(BURIED_ERROR);
    expect(doneOf(ev).finishReason).toBe("stop");

    // Same bytes again: the same message and the same blob.
    const broker = createClient(BrokerService, t.stack.sockets.brokerd);
    const before = await broker.blobStat({});
    const again = await t.stack.cli(["run", "-"], { input: `What failed here?\n\n${log}`, timeoutMs: 60_000 });
    const id2 = /session (\S+)/.exec(again.stderr)![1]!;
    const h2 = await t.client.getSession({ id: id2 });
    expect(JSON.parse(h2.messages[0]!.messageJson)).toEqual(first);
    const after = await broker.blobStat({});
    broker.close();
    expect(after.blobs).toBe(before.blobs);
    expect(after.pinned).toBeGreaterThanOrEqual(1);
  });

  it("a 16k-token first message is not compacted", async () => {
    const src = (sourceFile() as string).slice(0, 60_000);
    const tokens = countTokens(src);
    expect(tokens).toBeGreaterThan(8_000);
    const id = await newSession(t.client, "big first");
    // Sent whole (the pre-pass threshold is above it in the next stack); here it is spilled, never compacted.
    const done = doneOf(await turn(t.client, id, src));
    expect(done.finishReason).toBe("stop");
    expect(done.compactions).toBe(0);
    expect(t.stack.sim.completions.some((c) => c.rawBody.includes("[Boxmaker compaction]"))).toBe(false);
  });
});

describe("a whole big first message and overflow recovery (simulator)", () => {
  const t = useStack("bxlo-", {
    // The tools array alone is ~1,000 of these tokens (ten core tools): a slot small enough to fill, with room for it.
    sim: { nCtx: 5120 },
    loopd: {
      max_tokens: 256,
      prepass: { threshold_bytes: 1_000_000 },
      compaction: { threshold: 0.8, keep_recent_messages: 4 },
    },
  });

  it("a message that would overflow the context is spilled, the turn answers, and the session takes the next message", async () => {
    const id = await newSession(t.client, "overflow");
    const log = (buildLog() as string).slice(0, 40_000);
    const ev = await turn(t.client, id, `Look at this:\n\n${log}`);
    const done = doneOf(ev);
    expect(done.finishReason).toBe("stop");
    expect(done.compactions).toBe(1);
    const c = ev.flatMap((e) => (e.event.case === "compacted" ? [e.event.value] : []))[0]!;
    // The server's count of the new message shows it does not fit before anything is sent: spilled first, never refused.
    expect(c).toMatchObject({ reason: "large", spilledBlocks: 1 });
    const reqs = t.stack.sim.completions;
    expect(reqs.every((r) => r.status === 200)).toBe(true);
    expect(messagesOf(reqs.at(-1)!).at(-1)!.content).toContain("[Boxmaker input: log");
    expect(doneOf(await turn(t.client, id, "and now?")).finishReason).toBe("stop");
  });

  it("a session driven past its context compacts, keeps working, and its second compaction carries the first fold verbatim", async () => {
    const id = await newSession(t.client, "long");
    const question = (i: number) => `Turn ${i}: ${`fact-${i} `.repeat(150)}`;
    for (let i = 0; i < 24; i++) {
      expect(doneOf(await turn(t.client, id, question(i))).finishReason).toBe("stop");
    }
    const systems = t.stack.sim.completions
      .filter((r) => r.status === 200 && r.rawBody.includes(`fact-`))
      .map((r) => messagesOf(r)[0]!.content);
    const fold1 = systems.find((s) => s.includes("[Boxmaker fold 1:") && !s.includes("[Boxmaker fold 2:"));
    const fold2 = systems.find((s) => s.includes("[Boxmaker fold 2:"));
    expect(fold1).toBeDefined();
    expect(fold2).toBeDefined();
    const block1 = fold1!.slice(fold1!.indexOf("[Boxmaker fold 1:"));
    expect(fold2).toContain(block1);
    expect(
      t.stack.sim.completions.every((r) => r.status === 200 || r.rawBody.includes("[Boxmaker compaction]") === false),
    ).toBe(true);

    // On demand: boxmaker compact folds it now.
    const r = await t.stack.cli(["compact", id]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/compacted into epoch \d+: \d+ messages folded/);
    expect(doneOf(await turn(t.client, id, "still there?")).finishReason).toBe("stop");
  });
});

describe("a whole big first message (simulator)", () => {
  const t = useStack("bxlf-", {
    sim: { nCtx: 10240 },
    loopd: { max_tokens: 256, prepass: { threshold_bytes: 1_000_000 } },
  });

  it("a first message that fits is sent whole and not compacted, though bytes/3 says it would not fit", async () => {
    // ~7,300 real tokens; at 3 bytes per token the old estimate said more than 0.85 of 10,240.
    let text = "";
    for (let i = 0; countTokens(text) < 7_300; i++) text += `The quick brown fox ${i} jumps over the lazy dog. `;
    expect(Buffer.byteLength(text) / 3 + 256).toBeGreaterThan(10240 * 0.85);
    const id = await newSession(t.client, "fits");
    const done = doneOf(await turn(t.client, id, text));
    expect(done.finishReason).toBe("stop");
    expect(done.compactions).toBe(0);
    expect(t.stack.sim.completions.filter((c) => c.rawBody.includes("[Boxmaker compaction]"))).toHaveLength(0);
    const last = messagesOf(t.stack.sim.completions.at(-1)!);
    expect(last.at(-1)!.content).toBe(text);
  });
});

describe("large input while brokerd is away", () => {
  const t = useStack("bxlb-", { sim: { nCtx: 16384 }, loopd: { max_tokens: 512, peer_wait_ms: 1_000 } });

  it("a paste that goes to the blob store fails naming brokerd, not the conversation's length, and logs nothing", async () => {
    const id = await newSession(t.client);
    expect(doneOf(await turn(t.client, id, "hello")).finishReason).toBe("stop");
    const before = (await t.client.getSession({ id })).messages.length;
    await t.stack.kill("brokerd");
    const log = log300k();
    const said = await turn(t.client, id, `What failed here?\n\n${log}`).then(
      (evs) => JSON.stringify(evs.at(-1)?.event, (_, v) => (typeof v === "bigint" ? String(v) : v)),
      (err: unknown) => String(err),
    );
    expect(said, said).toMatch(/KB of input that goes to brokerd's blob store, and brokerd at \S+ did not come back/);
    expect(said).toContain("nothing was sent or saved");
    expect(said).not.toMatch(/the prompt is \d+ tokens/);
    // No completion went to the server with the whole paste in it, and the session holds what it held.
    expect(t.stack.sim.completions.filter((q) => JSON.stringify(q.body).includes(BURIED_ERROR))).toEqual([]);
    expect((await t.client.getSession({ id })).messages.length).toBe(before);
  }, 90_000);
});
