import { afterEach, describe, expect, it } from "vitest";
import { join } from "node:path";
import { mkdirSync } from "node:fs";
import { SlotActionKind, Status, RpcError } from "@boxmaker/common";
import { collect, startProxy, startStack, userMessages, type RunningProxy, type Stack } from "./support/stack.js";
import { FakeUpstream, send } from "./support/fake-upstream.js";
import { recording } from "./support/recordings.js";
import { tempDir } from "../../../test/support/tmp.js";
import { templateSha256 } from "../src/server-check/self-test.js";

let s: Stack | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe("SlotAction against the simulator", () => {
  it("saves, erases and restores a slot's cache", async () => {
    const saveDir = join(tempDir("bxss-").dir, "slots");
    mkdirSync(saveDir);
    s = await startStack({ sim: { slotSavePath: saveDir } });
    s.sim.enqueue({ content: "hello" });
    await collect(s.client, { slot: 1, messagesJson: userMessages() });
    const held = s.sim.slotTokens(1).length;
    const saved = await s.client.slotAction({ slot: 1, action: SlotActionKind.SAVE, filename: "session-a.bin" });
    expect(saved.tokens).toBe(held);
    expect(saved.bytes).toBeGreaterThan(0n);
    const erased = await s.client.slotAction({ slot: 1, action: SlotActionKind.ERASE });
    expect(erased.tokens).toBe(held);
    expect(s.sim.slotTokens(1)).toHaveLength(0);
    const restored = await s.client.slotAction({ slot: 1, action: SlotActionKind.RESTORE, filename: "session-a.bin" });
    expect(restored.tokens).toBe(held);
    expect(s.sim.slotTokens(1)).toHaveLength(held);
  });

  it("maps a missing save file to FAILED_PRECONDITION with the server's message", async () => {
    const saveDir = tempDir("bxss-").dir;
    s = await startStack({ sim: { slotSavePath: saveDir } });
    const err = await s.client
      .slotAction({ slot: 0, action: SlotActionKind.RESTORE, filename: "missing.bin" })
      .catch((e: RpcError) => e);
    expect(err).toBeInstanceOf(RpcError);
    expect((err as RpcError).status).toBe(Status.FAILED_PRECONDITION);
    expect((err as RpcError).message).toMatch(/Unable to restore slot/);
  });

  it("rejects bad requests before calling the server", async () => {
    s = await startStack();
    for (const req of [
      { slot: 0, action: SlotActionKind.UNSPECIFIED },
      { slot: 0, action: SlotActionKind.SAVE, filename: "../etc/passwd" },
      { slot: 0, action: SlotActionKind.SAVE, filename: "" },
      { slot: 5, action: SlotActionKind.ERASE },
    ]) {
      const err = (await s.client.slotAction(req).catch((e: RpcError) => e)) as RpcError;
      expect(err.status).toBe(Status.INVALID_ARGUMENT);
    }
    expect(s.sim.requests.filter((r) => r.path.startsWith("/slots/"))).toHaveLength(0);
  });
});

describe("SlotAction against recorded answers", () => {
  let p: RunningProxy | undefined;
  let fake: FakeUpstream | undefined;
  afterEach(async () => {
    await p?.close();
    await fake?.close();
  });

  it("returns the recorded tokens, bytes and ms", async () => {
    const tmp = tempDir("bxfk-");
    fake = await new FakeUpstream(join(tmp.dir, "llama.sock")).start();
    for (const a of ["save", "restore", "erase"])
      fake.always(`POST /slots/1?action=${a}`, (_q, res) => send(res, recording(`slot-${a}`)));
    const props = JSON.parse(recording("props").response.body);
    p = await startProxy(tmp.dir, {
      upstream: { socket_path: fake.socketPath },
      contract: { template_sha256: templateSha256(props.chat_template), n_ctx_per_slot: 32768, total_slots: 3 },
    });
    expect(
      await p.client.slotAction({ slot: 1, action: SlotActionKind.SAVE, filename: "session-a.bin" }),
    ).toMatchObject({ slot: 1, tokens: 715, bytes: 194580n, ms: 0.727 });
    expect(
      await p.client.slotAction({ slot: 1, action: SlotActionKind.RESTORE, filename: "session-a.bin" }),
    ).toMatchObject({ tokens: 715, bytes: 194580n, ms: 0.406 });
    expect(await p.client.slotAction({ slot: 1, action: SlotActionKind.ERASE })).toMatchObject({
      tokens: 715,
      bytes: 0n,
    });
    const saveReq = fake.requests.find((r) => r.path === "/slots/1?action=save")!;
    expect(JSON.parse(saveReq.body)).toEqual({ filename: "session-a.bin" });
  });
});
