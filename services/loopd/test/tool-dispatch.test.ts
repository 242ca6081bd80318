import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { create } from "@bufbuild/protobuf";
import { ToolCallSchema, ToolDecision, type ToolCall } from "@boxmaker/common";
import { runToolCall, type ToolDeps, type ToolOutcome } from "../src/loop/tool-dispatch.js";
import { eventsSoFar, fakeBroker } from "./fakes.js";
import { sessionPerTest } from "./session-fixture.js";

const fx = sessionPerTest();

const call = (name: string, args = "{}", parseError = ""): ToolCall =>
  create(ToolCallSchema, { id: "c1", name, arguments: args, parseError });

/** A local tool that records that it ran. */
function local() {
  const runs: unknown[] = [];
  const tool = async (argumentsJson: string): Promise<ToolOutcome> => {
    runs.push(JSON.parse(argumentsJson));
    return { isError: false, content: "ran locally" };
  };
  return { runs, tool };
}

async function dispatch(c: ToolCall, deps: ToolDeps, cutOffAt = 0) {
  const s = fx.session;
  await runToolCall(s, c, deps, new AbortController().signal, cutOffAt);
  const events = await eventsSoFar(s.events);
  const logged = s.state.history.at(-1)!;
  return {
    cases: events.map((e) => e.event?.case),
    content: JSON.parse(logged.json).content as string,
    tool: logged.tool,
  };
}

describe("one tool call", () => {
  it("goes to brokerd, is logged with its decision, then announced", async () => {
    const r = await dispatch(call("read_file", '{"path":"a"}'), { broker: fakeBroker() });
    expect(r.cases).toEqual(["toolCall", "toolDecision", "toolResult"]);
    expect(r.content).toBe('result of read_file({"path":"a"})');
    expect(r.tool).toEqual({ decision: "allowed", rule: "test", is_error: false });
  });

  it("with arguments that are not JSON is refused without asking brokerd", async () => {
    const broker = fakeBroker();
    const r = await dispatch(call("write_file", '{"pa', "bad"), { broker }, 64);
    expect(broker.calls).toEqual([]);
    expect(r.tool).toMatchObject({ decision: "denied", rule: "arguments-cut-off", is_error: true });
    expect(r.content).toMatch(/reached its limit of 64 tokens/);
  });

  it("when brokerd cannot be reached is an error result, with no decision announced", async () => {
    const broker = {
      async callTool(): Promise<never> {
        throw new Error("connect ECONNREFUSED");
      },
    };
    const r = await dispatch(call("read_file"), { broker });
    expect(r.cases).toEqual(["toolCall", "toolResult"]);
    expect(r.tool).toMatchObject({ decision: "none", rule: "broker-unavailable", is_error: true });
    expect(r.content).toMatch(/could not run read_file: connect ECONNREFUSED/);
  });

  it("staged by brokerd waits for a person, and the decision is the result", async () => {
    const broker = fakeBroker(() => ({ decision: ToolDecision.STAGED, proposalId: "p9" }));
    const r = await dispatch(call("write_file"), {
      broker,
      awaitDecision: async (id) => ({ isError: false, content: `applied ${id}`, proposal: { id, state: "applied" } }),
    });
    expect(r.content).toBe("applied p9");
    expect(r.tool).toEqual({
      decision: "staged",
      rule: "test",
      is_error: false,
      proposal_id: "p9",
      proposal_state: "applied",
    });
  });
});

describe("a tool loopd runs itself", () => {
  it("runs only on brokerd's go-ahead, with the call's arguments", async () => {
    const l = local();
    const r = await dispatch(call("spawn_agent", '{"task":"x"}'), {
      broker: fakeBroker(),
      localTools: { spawn_agent: l.tool },
    });
    expect(l.runs).toEqual([{ task: "x" }]);
    expect(r.content).toBe("ran locally");
    expect(r.tool).toMatchObject({ decision: "allowed" });
  });

  it("denied by policy does not run", async () => {
    const l = local();
    const r = await dispatch(call("spawn_agent"), {
      broker: fakeBroker(() => ({ decision: ToolDecision.DENIED, content: "denied by rule" })),
      localTools: { spawn_agent: l.tool },
    });
    expect(l.runs).toEqual([]);
    expect(r.content).toBe("denied by rule");
    expect(r.tool).toMatchObject({ decision: "denied", is_error: true });
  });

  it("staged runs once a person approves, and not when they reject", async () => {
    const approved = local();
    await dispatch(call("spawn_agent"), {
      broker: fakeBroker(() => ({ decision: ToolDecision.STAGED, proposalId: "p1" })),
      localTools: { spawn_agent: approved.tool },
      awaitDecision: async (id) => ({ isError: false, content: "approved", proposal: { id, state: "applied" } }),
    });
    expect(approved.runs).toHaveLength(1);

    const rejected = local();
    const r = await dispatch(call("spawn_agent"), {
      broker: fakeBroker(() => ({ decision: ToolDecision.STAGED, proposalId: "p2" })),
      localTools: { spawn_agent: rejected.tool },
      awaitDecision: async () => ({ isError: true, content: "rejected" }),
    });
    expect(rejected.runs).toEqual([]);
    expect(r.content).toBe("rejected");
  });

  it("when brokerd cannot check it does not run", async () => {
    const l = local();
    const r = await dispatch(call("spawn_agent"), {
      broker: {
        async callTool(): Promise<never> {
          throw new Error("brokerd is restarting");
        },
      },
      localTools: { spawn_agent: l.tool },
    });
    expect(l.runs).toEqual([]);
    expect(r.content).toMatch(/could not check spawn_agent: brokerd is restarting/);
  });

  it("runs on ALLOWED without error and on no other answer from brokerd (generated answers)", async () => {
    let ran = 0;
    let answers = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom(...Object.values(ToolDecision).filter((v) => typeof v === "number")), fc.integer()),
        fc.boolean(),
        fc.string({ maxLength: 40 }),
        fc.constantFrom("", "p7"),
        async (decision, isError, content, proposalId) => {
          answers++;
          const l = local();
          const r = await dispatch(call("spawn_agent", '{"task":"x"}'), {
            broker: fakeBroker(() => ({ decision, isError, content, proposalId })),
            localTools: { spawn_agent: l.tool },
            // Nobody decides: a staged call must not run, whatever the wait answers.
            awaitDecision: async (id) => ({ isError: false, content: "waiting", proposal: { id, state: "pending" } }),
          });
          const goAhead = decision === ToolDecision.ALLOWED && !isError;
          expect(l.runs.length).toBe(goAhead ? 1 : 0);
          if (goAhead) ran++;
          else expect(r.content).not.toBe("ran locally");
          if (!goAhead && decision !== ToolDecision.STAGED) expect(r.tool).toMatchObject({ is_error: true });
        },
      ),
      { numRuns: 300 },
    );
    expect(ran).toBeGreaterThan(0);
    expect(answers).toBe(300);
  });

  it("staged runs only on an approval brokerd applied (generated verdicts)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.boolean(),
        fc.option(fc.constantFrom("applied", "rejected", "failed", "pending"), { nil: undefined }),
        async (isError, state) => {
          const l = local();
          await dispatch(call("spawn_agent", '{"task":"x"}'), {
            broker: fakeBroker(() => ({ decision: ToolDecision.STAGED, proposalId: "p3" })),
            localTools: { spawn_agent: l.tool },
            awaitDecision: async (id) => ({
              isError,
              content: "verdict",
              ...(state ? { proposal: { id, state } } : {}),
            }),
          });
          expect(l.runs.length).toBe(!isError && state === "applied" ? 1 : 0);
        },
      ),
      { numRuns: 100 },
    );
  });
});
