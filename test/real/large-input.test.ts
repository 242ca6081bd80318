import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BrokerService, createClient } from "@boxmaker/common";
import type { Stack } from "../support/stack.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";
import { haveRealLlama, startStackOn } from "./support/real-llama.js";
import { useRealStack } from "./support/use-real-stack.js";
import { BURIED_ERROR, buildLog, sourceFile } from "../fixtures/large/generate.mjs";

type Msg = { role: string; content: string };

/** The system messages of a session's epochs, from its log. */
function epochSystems(stack: Stack, id: string): string[] {
  const dir = (stack.configs.loopd as { state_dir: string }).state_dir;
  return readFileSync(join(dir, "sessions", `${id}.jsonl`), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { rec: { t: string; system_json?: string } }).rec)
    .filter((r) => r.t === "epoch")
    .map((r) => (JSON.parse(r.system_json!) as Msg).content);
}

const log300k = (): string => {
  const lines = (buildLog() as string).split("\n");
  return [...lines.filter((l) => !l.includes("ERROR") && l.startsWith("2026")).slice(0, 600), ...lines].join("\n");
};

describe.skipIf(!haveRealLlama("real llama-server: large input and long sessions"))(
  "large input on a real llama-server",
  () => {
    // 32,768 tokens per slot.
    const t = useRealStack("bxr-li-", { model: "answer" });

    it("a 300 KB log piped into run gets an answer, takes three more messages, and its blob greps", async () => {
      const log = log300k();
      const r = await t.stack.cli(["run", "-"], { input: `What failed here?\n\n${log}`, timeoutMs: 120_000 });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout + r.stderr).toContain("1 input block spilled");
      const id = /session (\S+)/.exec(r.stderr)![1]!;
      const first = JSON.parse((await t.client.getSession({ id })).messages[0]!.messageJson) as Msg;
      expect(first.content).toContain(BURIED_ERROR);
      const blob = /blob:sha256:[0-9a-f]{64}/.exec(first.content)![0];
      const prompts: number[] = [];
      for (const q of ["which batch?", "which worker?", "anything else?"]) {
        const done = doneOf(await turn(t.client, id, q));
        expect(done.finishReason).toBe("stop");
        prompts.push(done.timings!.cacheN + done.timings!.promptN);
      }
      // The tool call the model would make, through brokerd as the session.
      const broker = createClient(BrokerService, t.stack.sockets.brokerd);
      try {
        const res = await broker.callTool({
          sessionId: id,
          callId: "c1",
          name: "call_tool",
          argumentsJson: JSON.stringify({
            name: "grep_blob",
            arguments: { blob, pattern: "SerializationFailure", context: 0 },
          }),
        });
        expect(res.isError, res.content).toBe(false);
        expect(res.content).toContain(BURIED_ERROR);
        const stat = await broker.blobStat({});
        expect(stat.blobs).toBeGreaterThanOrEqual(1);
        expect(stat.pinned).toBeGreaterThanOrEqual(1);
      } finally {
        broker.close();
      }
      console.log(
        `real: 300 KB log → ${Buffer.byteLength(first.content)} bytes in the message; prompts of the next turns ${prompts.join(", ")} tokens`,
      );
    }, 300_000);

    it("a 16k-token first message is sent whole and not compacted", async () => {
      const dir = join(t.dir, "big");
      const s2 = await startStackOn(t.llama, dir, { loopd: { prepass: { threshold_bytes: 1_000_000 } } });
      const c2 = loopClient(s2.sockets.loopd);
      try {
        const src = (sourceFile() as string).slice(0, 48_000);
        const id = await newSession(c2, "big first");
        const done = doneOf(await turn(c2, id, `Review this file:\n\n${src}`));
        expect(done.finishReason).toBe("stop");
        expect(done.compactions).toBe(0);
        expect(done.spilledBlocks).toBe(0);
        const prompt = done.timings!.cacheN + done.timings!.promptN;
        console.log(
          `real: ${Buffer.byteLength(src)}-byte first message = ${prompt} prompt tokens (bytes/3 said ${Math.ceil(Buffer.byteLength(src) / 3)}); compactions ${done.compactions}`,
        );
        expect(prompt).toBeGreaterThan(12_000);
        expect((await c2.getSession({ id })).session!.epoch).toBe(0);
        expect(doneOf(await turn(c2, id, "and the imports?")).compactions).toBe(0);
      } finally {
        c2.close();
        await s2.stop();
      }
    }, 300_000);
  },
);

describe.skipIf(!haveRealLlama("real llama-server: long sessions compact"))(
  "a long session on a real llama-server",
  () => {
    // 3,072 tokens per slot: a few turns fill it.
    const t = useRealStack(
      "bxr-lc-",
      { model: "answer", ctxSize: 3 * 3072 },
      { loopd: { max_tokens: 128, compaction: { threshold: 0.8, keep_recent_messages: 4 } } },
    );

    it("compacts, keeps working, and its second compaction carries the first fold verbatim; a 60 KB message overflows and recovers", async () => {
      const id = await newSession(t.client, "long");
      let compactions = 0;
      for (let i = 0; i < 40 && epochSystems(t.stack, id).length < 3; i++) {
        const done = doneOf(
          await turn(t.client, id, `Turn ${i}: remember fact-${i}. ${`note ${i} about the plan; `.repeat(40)}`),
        );
        expect(done.finishReason).toBe("stop");
        compactions += done.compactions;
      }
      const systems = epochSystems(t.stack, id);
      expect(systems.length).toBeGreaterThanOrEqual(3);
      const fold1 = systems[1]!.slice(systems[1]!.indexOf("[Boxmaker fold 1:"));
      expect(fold1.length).toBeGreaterThan(20);
      expect(systems[2]).toContain(fold1);
      expect(systems[2]).toContain("[Boxmaker fold 2:");
      console.log(`real: ${compactions} compactions; fold 1 (${fold1.length} bytes) carried verbatim into epoch 2`);

      // Bigger than the whole context, sent whole (under the pre-pass threshold): the server refuses, loopd spills and retries.
      const big = (buildLog() as string).slice(0, 30_000);
      const done = doneOf(await turn(t.client, id, big));
      expect(done.finishReason).toBe("stop");
      expect(done.compactions).toBe(1);
      expect(doneOf(await turn(t.client, id, "still with me?")).finishReason).toBe("stop");
    }, 600_000);
  },
);
