import { describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { useStack } from "../support/use-stack.js";

/**
 * The whole path once, for real: the CLI binary → loopd → inferproxy →
 * llama-server (the simulator, on a Unix socket) and loopd → brokerd →
 * read_file on disk, each daemon its own process on its own socket.
 */
describe("walking skeleton", () => {
  const t = useStack("bxe-");

  it("boxmaker run: model → read_file via brokerd → model → streamed answer", async () => {
    writeFileSync(join(t.stack.workspace, "notes.txt"), "the launch code is 4711\n");
    t.stack.sim.enqueue({ toolCalls: [{ id: "call-1", name: "read_file", arguments: '{"path": "notes.txt"}' }] });
    t.stack.sim.enqueue({ content: "The note says the launch code is 4711." });

    const r = await t.stack.cli(["run", "what", "does", "notes.txt", "say?"]);
    expect(r.stderr).not.toMatch(/error|failed/i);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("The note says the launch code is 4711.");
    expect(r.stdout).toMatch(/read_file/);

    const [first, second] = t.stack.sim.completions;
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    const body1 = first!.body as {
      id_slot: number;
      cache_prompt: boolean;
      stream: boolean;
      return_progress: boolean;
      tools: { function: { name: string } }[];
    };
    // The inference contract, on the wire.
    expect(body1).toMatchObject({ id_slot: 0, cache_prompt: true, stream: true, return_progress: true });
    expect(body1.tools.map((t) => t.function.name)).toContain("find_tool");
    // The tool result went back to the model verbatim, after the assistant message as the server produced it.
    const msgs2 = (second!.body as { messages: { role: string; content: string | null; tool_call_id?: string }[] })
      .messages;
    expect(msgs2.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call-1" });
    expect(msgs2.at(-1)!.content).toContain("the launch code is 4711");
    // Replay kept every earlier byte: the second request was served from the cache.
    expect(second!.cacheN).toBeGreaterThan(0);
    expect(second!.cacheN! + (second!.timings?.prompt_n ?? 0)).toBe(second!.promptTokens);
  });
});
