import { Status } from "@boxmaker/common";
import { countTokens, renderPrompt, type ChatMessage } from "@boxmaker/llama-sim";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { doneOf, loopClient, newSession, turn, type LoopClient } from "../support/loop-client.js";
import { useStack } from "../support/use-stack.js";

const toolResults = (events: Awaited<ReturnType<typeof turn>>) =>
  events.flatMap((e) => (e.event.case === "toolResult" ? [e.event.value] : []));
const decisions = (events: Awaited<ReturnType<typeof turn>>) =>
  events.flatMap((e) => (e.event.case === "toolDecision" ? [e.event.value.rule] : []));

/**
 * A session's permission mode end to end: set through loopd, recorded in its
 * log, sent with every CallTool and decided by brokerd, kept across a loopd
 * kill, and invisible to the server: the tools array and every earlier byte
 * stay as they were, so each request is charged only its new tokens.
 */
describe("permission modes through the stack", () => {
  const t = useStack("bxm-");

  it("read-only refuses, auto-edit applies, the mode survives a kill -9 and the prompt cache stays warm across switches", async () => {
    const id = await newSession(t.client, "modes");
    const write = (n: number, path: string) => {
      t.stack.sim.enqueue({
        toolCalls: [{ id: `call-${n}`, name: "write_file", arguments: JSON.stringify({ path, content: `v${n}\n` }) }],
      });
      t.stack.sim.enqueue({ content: `Done ${n}.` });
    };

    expect((await t.client.setSessionMode({ sessionId: id, mode: "read-only" })).mode).toBe("read-only");
    write(1, "plan.txt");
    const planned = await turn(t.client, id, "write plan.txt");
    expect(doneOf(planned).finishReason).toBe("stop");
    expect(decisions(planned)).toEqual(["mode:read-only"]);
    expect(toolResults(planned)[0]!.content).toContain("plan mode");
    expect(existsSync(join(t.stack.workspace, "plan.txt"))).toBe(false);
    expect(planned.some((e) => e.event.case === "modeChanged")).toBe(false);
    // The model was told with the turn's message, so it plans instead of trying writes.
    const told = (t.stack.sim.completions.at(-1)!.body as { messages: ChatMessage[] }).messages.find(
      (m) => m.role === "user",
    );
    expect(told?.content).toContain("permission mode to read-only: plan mode");

    const switched = await t.client.setSessionMode({ sessionId: id, mode: "auto-edit" });
    expect(switched.mode).toBe("auto-edit");
    write(2, "edit.txt");
    const edited = await turn(t.client, id, "now write edit.txt");
    expect(decisions(edited)).toEqual(["mode:auto-edit"]);
    expect(readFileSync(join(t.stack.workspace, "edit.txt"), "utf8")).toBe("v2\n");

    // The mode is a record in the log: a loopd killed outright folds it back.
    await t.stack.kill("loopd", "SIGKILL");
    await t.stack.startDaemon("loopd");
    const after: LoopClient = loopClient(t.stack.sockets.loopd);
    try {
      await after.waitForReady(10_000);
      expect((await after.getSession({ id })).session!.mode).toBe("auto-edit");
      const listed = (await after.listSessions({})).sessions.find((s) => s.id === id);
      expect(listed?.mode).toBe("auto-edit");
      write(3, "again.txt");
      const again = await turn(after, id, "and again.txt");
      expect(decisions(again)).toEqual(["mode:auto-edit"]);
      expect(readFileSync(join(t.stack.workspace, "again.txt"), "utf8")).toBe("v3\n");

      await after.setSessionMode({ sessionId: id, mode: "ask" });
      write(4, "asked.txt");
      // Nobody answers the question: cancel once it is staged.
      const asked = (async () => {
        const out = [];
        for await (const ev of after.send({ sessionId: id, text: "and asked.txt" })) {
          out.push(ev);
          if (ev.event.case === "toolDecision") await after.cancelTurn({ sessionId: id });
        }
        return out;
      })();
      expect(decisions(await asked)).toEqual(["default:write"]);
      expect(existsSync(join(t.stack.workspace, "asked.txt"))).toBe(false);

      // Words that are not modes are refused before anything is recorded.
      for (const bad of ["yolo", "", "auto; rm", "automatic"]) {
        await expect(after.setSessionMode({ sessionId: id, mode: bad })).rejects.toMatchObject({
          status: Status.INVALID_ARGUMENT,
        });
      }
      expect((await after.getSession({ id })).session!.mode).toBe("ask");
    } finally {
      after.close();
    }

    // Each switch is one record in the log, in order.
    const dir = join(t.dir, "state", "loopd", "sessions");
    const file = readdirSync(dir).find((f) => f.includes(id))!;
    const modes = readFileSync(join(dir, file), "utf8")
      .trim()
      .split("\n")
      .map((l) => (JSON.parse(l) as { rec: { t: string; mode?: string } }).rec)
      .filter((r) => r.t === "mode")
      .map((r) => r.mode);
    expect(modes).toEqual(["read-only", "auto-edit", "ask"]);

    // The server saw the same tools array throughout and was charged only the new tokens of each request.
    const reqs = t.stack.sim.completions;
    expect(reqs.length).toBeGreaterThanOrEqual(7);
    let charged = 0;
    for (let k = 1; k < reqs.length; k++) {
      const prev = reqs[k - 1]!.body as { messages: ChatMessage[]; tools: unknown[] };
      const cur = reqs[k]!.body as { messages: ChatMessage[]; tools: unknown[] };
      expect(cur.tools).toEqual(prev.tools);
      expect(cur.messages.slice(0, prev.messages.length)).toEqual(prev.messages);
      if (reqs[k]!.cacheN === 0) continue; // the first request after loopd's restart, if the slot was reset
      const assistant = cur.messages[prev.messages.length]!;
      const held = countTokens(
        renderPrompt([...prev.messages, assistant], prev.tools, { addGenerationPrompt: false }).text,
      );
      expect({ k, prompt_n: reqs[k]!.timings!.prompt_n }).toEqual({
        k,
        prompt_n: countTokens(renderPrompt(cur.messages, cur.tools).text) - held,
      });
      charged++;
    }
    expect(charged).toBeGreaterThanOrEqual(reqs.length - 2);
  });
});
