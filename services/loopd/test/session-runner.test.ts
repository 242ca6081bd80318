import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RpcError, Status } from "@boxmaker/common";
import type { LoopdConfig } from "../src/config.js";
import { SessionRunner } from "../src/loop/session-runner.js";
import { SessionStore } from "../src/sessions/session-store.js";
import { ServerSlots } from "../src/slots/server-slots.js";
import { SlotMapCheck } from "../src/slots/slot-map.js";
import { eventsSoFar, fakeBroker, fakeInfer, silentLog, type ScriptedReply } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let store: SessionStore;

beforeEach(() => {
  tmp = tempDir();
  store = new SessionStore(tmp.dir, silentLog);
});
afterEach(() => {
  store.closeAll();
  tmp.cleanup();
});

function config(slots: LoopdConfig["slots"] = { main: 0, subagent: 1, scheduled: 2 }): LoopdConfig {
  return {
    socket: "",
    state_dir: tmp.dir,
    inferproxy_socket: "",
    brokerd_socket: "",
    slots,
    system_prompt: "sys",
    max_tokens: 100,
    budgets: { max_iterations: 0, max_total_tokens: 0, max_wall_ms: 0, max_thinking_tokens: 0 },
    parking: { enabled: false },
    approval_wait_ms: 1_000,
    peer_wait_ms: 0,
    peer_call_timeout_ms: 60_000,
    server_wait_ms: 120_000,
    server_check_ms: 0,
    session_idle_ms: 0,
    session_logs: { compress_archived_after_days: 0, compress_idle_after_days: 0 },
    compaction: { threshold: 0.85, keep_recent_messages: 8 },
    prepass: { enabled: false, threshold_bytes: 32_768, excerpt_bytes: 6_144 },
    schedules: [],
    project_instructions: { workspace: "", files: [], max_bytes: 1024 },
    log_level: "silent",
  };
}

function runner(
  replies: ScriptedReply[],
  pins: { owner: string; sha256: string[] }[] = [],
  slots?: LoopdConfig["slots"],
) {
  const infer = {
    ...fakeInfer(replies),
    status: async () => ({ slots: [], selfTest: undefined }),
    slotAction: async () => ({ tokens: 0, ms: 0 }),
  };
  const broker = {
    ...fakeBroker(),
    getTools: async () => ({ toolsJson: "[]" }),
    pinBlobs: async (req: { owner: string; sha256: string[] }) => {
      pins.push({ owner: req.owner, sha256: [...req.sha256] });
      return {};
    },
    putBlob: async () => ({ sha256: "" }),
  };
  const cfg = config(slots);
  return new SessionRunner({
    store,
    infer: infer as never,
    broker: broker as never,
    log: silentLog,
    config: cfg,
    serverSlots: new ServerSlots(infer as never, new SlotMapCheck(cfg.slots), silentLog, 0),
  });
}

const turnEnds = async (hub: Parameters<typeof eventsSoFar>[0]) =>
  (await eventsSoFar(hub)).flatMap((ev) =>
    ev.event?.case === "turnDone"
      ? [`done:${ev.event.value.finishReason}`]
      : ev.event?.case === "turnFailed"
        ? [`failed:${ev.event.value.code}`]
        : [],
  );

describe("the end of a turn is announced once, by the runner", () => {
  it("a turn that ran: one turn_done, after everything else the turn published", async () => {
    const r = runner([{ content: "hi" }]);
    const s = await r.create("main", "t");
    const out = await r.start(s.id, "hello");
    expect(out.finishReason).toBe("stop");
    const cases = (await eventsSoFar(s.events)).map((ev) => ev.event?.case);
    expect(cases).toEqual(["turnStarted", "content", "turnDone"]);
  });

  it("a turn whose model request failed: one turn_failed", async () => {
    const r = runner([{ error: new RpcError(Status.UNAVAILABLE, "inferproxy is down") }]);
    const s = await r.create("main", "t");
    const out = await r.start(s.id, "hello");
    expect(out.error?.statusName).toBe("UNAVAILABLE");
    expect(await turnEnds(s.events)).toEqual(["failed:UNAVAILABLE"]);
  });

  it("a turn cancelled while it waited for its slot: one turn_done (cancelled), and the wait is left", async () => {
    const r = runner([{ content: "slow", delayMs: 10_000 }]);
    const a = await r.create("main", "a");
    const b = await r.create("main", "b");
    const first = r.start(a.id, "take the slot");
    const queued = r.start(b.id, "wait");
    expect(r.slots.waiting(0)).toEqual([b.id]);
    expect(r.cancel(b.id)).toBe(true);
    await expect(queued).rejects.toMatchObject({ code: "TURN_CANCELLED" });
    expect(await turnEnds(b.events)).toEqual(["done:cancelled"]);
    expect(r.slots.waiting(0)).toEqual([]);
    r.cancel(a.id);
    expect((await first).finishReason).toBe("cancelled");
    expect(await turnEnds(a.events)).toEqual(["done:cancelled"]);
  });

  it("a turn whose session cannot be written: one turn_failed naming the log", async () => {
    const r = runner([]);
    const s = await r.create("main", "t");
    s.log.close(); // every later write fails, as on an I/O error
    await expect(r.start(s.id, "hello")).rejects.toMatchObject({ code: "LOG_WRITE_FAILED" });
    const events = await eventsSoFar(s.events);
    expect(events.map((ev) => ev.event?.case)).toEqual(["turnFailed"]);
    expect(JSON.stringify(events[0]!.event?.value)).toMatch(/loopd cannot write the session log/);
    store = new SessionStore(tmp.dir, silentLog); // the closed log cannot be closed again
  });
});

describe("brokerd hears a session's pins when they change", () => {
  const ref = `blob:sha256:${"ab".repeat(32)}`;

  it("not after every turn; when a message names a new blob; released when the session is deleted", async () => {
    const pins: { owner: string; sha256: string[] }[] = [];
    const r = runner([{ content: "one" }, { content: "two" }, { content: "three" }, { content: "four" }], pins);
    const s = await r.create("main", "t");
    await r.start(s.id, "hello");
    await r.start(s.id, "again");
    expect(pins).toEqual([]); // a new session pins nothing, and brokerd knows it
    await r.start(s.id, `look at ${ref}`);
    await r.start(s.id, "and once more");
    expect(pins).toEqual([{ owner: s.id, sha256: [ref] }]);
    r.blobs.release(s.id);
    expect(pins.at(-1)).toEqual({ owner: s.id, sha256: [] });
  });
});

describe("a subagent on the slot its parent holds (fewer slots than roles)", () => {
  const spawn = (id: string): ScriptedReply => ({
    toolCalls: [{ id, name: "spawn_agent", arguments: JSON.stringify({ task: `count the files (${id})` }) }],
  });
  for (const [layout, slots, role] of [
    ["one slot: every role on 0", { main: 0, subagent: 0, scheduled: 0 }, "main"],
    ["two slots: scheduled and subagent share 1", { main: 0, subagent: 1, scheduled: 1 }, "scheduled"],
  ] as const) {
    it(`${layout}: the ${role} session's subagent runs on its hold and the turn completes`, async () => {
      const r = runner(
        [spawn("c1"), { content: "12 files" }, { content: "The subagent counted 12 files." }],
        [],
        slots,
      );
      const s = await r.create(role, "t");
      let timer: NodeJS.Timeout | undefined;
      const out = await Promise.race([
        r.start(s.id, "delegate"),
        new Promise<never>((_, no) => {
          timer = setTimeout(() => no(new Error("deadlocked on the shared slot")), 20_000);
        }),
      ]).finally(() => clearTimeout(timer));
      expect(out.finishReason).toBe("stop");
      expect(out.finalText).toBe("The subagent counted 12 files.");
      const child = store.list().find((x) => x.state.role === "subagent")!;
      expect(child.state.slot).toBe(s.state.slot);
      expect(await turnEnds(child.events)).toEqual(["done:stop"]);
      // The slot is free again for the next turn.
      expect(r.slots.holder(s.state.slot)).toBeUndefined();
    });
  }
});
