import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendFileSync, readFileSync, writeFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { LogCorruptError } from "../src/errors.js";
import { SessionLog, type LogRecord } from "../src/session-log.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let path: string;
beforeEach(() => {
  tmp = tempDir();
  path = join(tmp.dir, "sessions", "s.jsonl");
});
afterEach(() => tmp.cleanup());

const msg = (json: string): LogRecord => ({ t: "message", epoch: 0, json, at: 1 });

describe("session log", () => {
  it("keeps message JSON byte for byte across reopen", () => {
    const tricky = '{"role":"assistant","content":"a\\u00e9\\n\\"q\\" & <x>","reasoning_content":"  spaced  "}';
    const { log } = SessionLog.open(path);
    log.append(msg(tricky));
    log.close();
    const { records } = SessionLog.read(path);
    expect(records).toEqual([msg(tricky)]);
    expect((records[0] as { json: string }).json).toBe(tricky);
  });

  it("drops a torn final record and keeps every earlier one", () => {
    const { log } = SessionLog.open(path);
    log.append(msg("1"));
    log.append(msg("2"));
    log.close();
    const full = readFileSync(path);
    // A crash mid-write leaves part of a third line.
    appendFileSync(path, full.subarray(0, 30));
    const reopened = SessionLog.open(path);
    expect(reopened.records.map((r) => (r as { json: string }).json)).toEqual(["1", "2"]);
    expect(reopened.droppedTailBytes).toBe(30);
    // The file is cut back, so the next append follows the last good record.
    reopened.log.append(msg("3"));
    reopened.log.close();
    expect(SessionLog.read(path).records.map((r) => (r as { json: string }).json)).toEqual(["1", "2", "3"]);
    expect(statSync(path).size).toBeGreaterThan(full.length);
  });

  it("drops a complete-looking final line whose checksum does not match", () => {
    const { log } = SessionLog.open(path);
    log.append(msg("1"));
    log.append(msg("2"));
    log.close();
    const lines = readFileSync(path, "utf8").split("\n");
    lines[1] = lines[1]!.replace('"2"', '"X"');
    writeFileSync(path, lines.join("\n"));
    expect(SessionLog.open(path).records).toHaveLength(1);
  });

  it("refuses to load a log damaged before its last record", () => {
    const { log } = SessionLog.open(path);
    for (const j of ["1", "2", "3"]) log.append(msg(j));
    log.close();
    const lines = readFileSync(path, "utf8").split("\n");
    lines[0] = lines[0]!.slice(0, 10);
    writeFileSync(path, lines.join("\n"));
    expect(() => SessionLog.open(path)).toThrow(LogCorruptError);
  });

  it("a failed write is reported, not acknowledged, and the log stays appendable", () => {
    const { log } = SessionLog.open(path);
    log.append(msg("1"));
    // An I/O failure (as on a full disk): the descriptor stops working under the log.
    const fd = (log as unknown as { fd: number }).fd;
    (log as unknown as { fd: number }).fd = 999_999;
    expect(() => log.append(msg("2"))).toThrow(/could not persist/);
    expect(log.length).toBe(1);
    (log as unknown as { fd: number }).fd = fd;
    log.append(msg("3"));
    log.close();
    expect(SessionLog.read(path).records.map((r) => (r as { json: string }).json)).toEqual(["1", "3"]);
  });
});
