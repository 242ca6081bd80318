import { describe, expect, it } from "vitest";
import { SilenceJudge, slotSample, type SlotSample } from "../src/completion/liveness.js";
import { recording } from "./support/recordings.js";

const busy = (decoded: number, task = 7): SlotSample => ({ processing: true, decoded, promptProcessed: 0, task });

describe("SilenceJudge", () => {
  it("keeps a silent stream while the slot's n_decoded keeps rising, however long", () => {
    const j = new SilenceJudge(1000, 0);
    expect(j.judge(busy(10), 500).verdict).toBe("wait"); // first look: a baseline
    let t = 1000;
    for (let n = 20; n < 400; n += 5, t += 500) {
      const v = j.judge(busy(n), t);
      expect(v.verdict).toBe("wait");
      expect(v.progressed).toBe(true);
    }
    expect(j.extensions).toBeGreaterThan(50);
  });

  it("kills a slot that is processing but decodes nothing for a whole window (a hung server)", () => {
    const j = new SilenceJudge(1000, 0);
    expect(j.judge(busy(10), 500).verdict).toBe("wait");
    const v = j.judge(busy(10), 1000);
    expect(v.verdict).toBe("kill");
    expect(v.reason).toMatch(/decoded nothing/);
  });

  it("a busy spell buys one window, not forever", () => {
    const j = new SilenceJudge(1000, 0);
    j.judge(busy(10), 500);
    expect(j.judge(busy(20), 1000).verdict).toBe("wait"); // progress at 1000
    expect(j.judge(busy(20), 1500).verdict).toBe("wait"); // stalled 500 ms
    expect(j.judge(busy(20), 2000).verdict).toBe("kill"); // stalled a window
  });

  it("kills when the slot is idle or /slots does not answer, once the window is up", () => {
    const idle = { processing: false, decoded: 5, promptProcessed: 0, task: 7 };
    const a = new SilenceJudge(1000, 0);
    expect(a.judge(idle, 500).verdict).toBe("wait");
    expect(a.judge(idle, 1000).verdict).toBe("kill");
    const b = new SilenceJudge(1000, 0);
    expect(b.judge(undefined, 500).verdict).toBe("wait");
    expect(b.judge(undefined, 1000)).toMatchObject({ verdict: "kill", reason: expect.stringMatching(/GET \/slots/) });
  });

  it("another task on the slot is not progress; a chunk resets everything", () => {
    const j = new SilenceJudge(1000, 0);
    j.judge(busy(10, 1), 500);
    expect(j.judge(busy(50, 2), 1000).verdict).toBe("kill");
    const k = new SilenceJudge(1000, 0);
    k.judge(busy(10), 500);
    k.onChunk(900);
    expect(k.judge(busy(10), 1400).verdict).toBe("wait");
    expect(k.judge(busy(10), 1900).verdict).toBe("kill");
  });

  it("prefill progress (n_prompt_tokens_processed) counts as work", () => {
    const j = new SilenceJudge(1000, 0);
    j.judge({ processing: true, decoded: 0, promptProcessed: 2048, task: 3 }, 500);
    expect(j.judge({ processing: true, decoded: 0, promptProcessed: 4096, task: 3 }, 1000).verdict).toBe("wait");
  });
});

describe("slotSample", () => {
  it("reads the recorded /slots shapes", () => {
    const idle = JSON.parse(recording("slots-idle").response.body as string);
    expect(slotSample(idle, 1)).toEqual({ processing: false, decoded: -1, promptProcessed: -1, task: -1 });
    const after = JSON.parse(recording("slots-after-restore").response.body as string);
    expect(slotSample(after, 1)).toMatchObject({ processing: false, decoded: 0, task: 395 });
    expect(slotSample(after, 9)).toBeUndefined();
    expect(slotSample({ error: "x" }, 0)).toBeUndefined();
  });
});
