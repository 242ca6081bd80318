import { describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { countTokens, renderPrompt, type ChatMessage } from "@boxmaker/llama-sim";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";

/**
 * loopd's second promise: every follow-up request costs the server only its
 * new tokens. The simulator charges for every byte that differs from what the
 * slot holds, so an exact prompt_n proves no earlier byte changed.
 */
describe("prompt cache reuse across a 20-turn session", () => {
  const t = useStack("bxc-");

  it("every request after the first has prompt_n equal to the tokens of its new messages", async () => {
    writeFileSync(join(t.stack.workspace, "data.txt"), 'alpha\nbeta "quoted" & <tag>\n');
    const id = await newSession(t.client, "cache");
    for (let i = 0; i < 20; i++) {
      t.stack.sim.enqueue({
        reasoning: `Turn ${i}: I should look at the file first.`,
        toolCalls: [
          { id: `call-${i}`, name: "read_file", arguments: `{"path": "data.txt", "start_line": ${1 + (i % 2)}}` },
        ],
      });
      t.stack.sim.enqueue({ reasoning: "Now I can answer.", content: `Answer ${i}: the file has "beta".` });
      const events = await turn(t.client, id, `Question ${i}: what is in data.txt?`);
      expect(doneOf(events).finishReason).toBe("stop");
    }

    const reqs = t.stack.sim.completions;
    expect(reqs).toHaveLength(40);
    for (let k = 1; k < reqs.length; k++) {
      const prev = reqs[k - 1]!.body as { messages: ChatMessage[]; tools: unknown[] };
      const cur = reqs[k]!.body as { messages: ChatMessage[]; tools: unknown[] };
      // The previous request, then the assistant message the server produced, then only new messages.
      expect(cur.messages.slice(0, prev.messages.length)).toEqual(prev.messages);
      expect(cur.tools).toEqual(prev.tools);
      const assistant = cur.messages[prev.messages.length]!;
      expect(assistant.role).toBe("assistant");
      expect(assistant.reasoning_content).toBe(reqs[k - 1]!.output!.reasoning);
      const held = countTokens(
        renderPrompt([...prev.messages, assistant], prev.tools, { addGenerationPrompt: false }).text,
      );
      const now = countTokens(renderPrompt(cur.messages, cur.tools).text);
      expect({ k, prompt_n: reqs[k]!.timings!.prompt_n }).toEqual({ k, prompt_n: now - held });
      expect(reqs[k]!.cacheN).toBe(held);
    }
  });
});
