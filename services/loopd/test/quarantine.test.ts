import { afterEach, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { SessionLog } from "../src/sessions/session-log.js";
import { SessionStore } from "../src/sessions/session-store.js";
import { tempDir } from "../../../test/support/tmp.js";

const silent = pino({ level: "silent" });
let cleanup: (() => void) | undefined;
afterEach(() => cleanup?.());

const fresh = { role: "main" as const, parentId: "", slot: 0, systemJson: "{}", toolsJson: "[]" };

describe("a damaged session log is quarantined, not fatal", () => {
  it("loopd loads the others; the damaged ones are read-only and say what is wrong", () => {
    const t = tempDir("bxs-");
    cleanup = t.cleanup;
    const a = new SessionStore(t.dir, silent);
    const good = a.create({ ...fresh, title: "good" });
    const bad = a.create({ ...fresh, title: "bad" });
    for (let i = 0; i < 3; i++)
      bad.append({ t: "message", epoch: 0, json: `{"role":"user","content":"m${i}"}`, at: 2 });
    a.closeAll();
    // Damage a record in the middle of bad's log, and add a log whose first record is not a session.
    const badPath = join(t.dir, "sessions", `${bad.id}.jsonl`);
    const lines = readFileSync(badPath, "utf8").split("\n");
    lines[2] = lines[2]!.replace('"crc":"', '"crc":"00');
    writeFileSync(badPath, lines.join("\n"));
    const { log: headless } = SessionLog.open(join(t.dir, "sessions", "s-headless.jsonl"));
    headless.append({ t: "message", epoch: 0, json: "{}", at: 1 });
    headless.close();

    const b = new SessionStore(t.dir, silent);
    const r = b.loadAll();
    expect(r.loaded).toBe(3);
    expect(r.damaged.map((d) => d.id).sort()).toEqual([bad.id, "s-headless"].sort());
    expect(b.get(bad.id)!.state.title).toMatch(
      /^\[damaged, read-only: record 3 is damaged and is not the last one\] bad$/,
    );
    expect(b.get("s-headless")!.state.title).toMatch(
      /damaged, read-only: session log does not start with a session record/,
    );
    expect(() => b.get(bad.id)!.append({ t: "message", epoch: 0, json: "{}", at: 3 })).toThrow(/read-only/);
    b.get(good.id)!.append({ t: "message", epoch: 0, json: '{"role":"user","content":"still fine"}', at: 3 });
    expect(b.get(good.id)!.state.history.length).toBeGreaterThan(0);
    b.closeAll();
  });
});
