import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { appendFileSync, readFileSync, writeFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { Status } from "@boxmaker/common";
import { LogCorruptError, LogWriteError } from "../src/errors.js";
import { SessionLog, type LogRecord } from "../src/sessions/session-log.js";
import { tempDir } from "../../../test/support/tmp.js";

// The disk, as the log sees it: writes go through unless a test makes the next ones fail.
const disk = vi.hoisted(() => ({ failAfterBytes: undefined as number | undefined }));
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const writeSync = ((fd: number, buf: Uint8Array, off: number, len: number, pos: number) => {
    if (disk.failAfterBytes === undefined) return fs.writeSync(fd, buf, off, len, pos);
    if (disk.failAfterBytes === 0)
      throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
    // Part of the record reaches the file before the disk fills up.
    const n = Math.min(len, disk.failAfterBytes);
    disk.failAfterBytes -= n;
    return fs.writeSync(fd, buf, off, n, pos);
  }) as typeof fs.writeSync;
  return { ...fs, default: { ...fs, writeSync }, writeSync };
});

let tmp: ReturnType<typeof tempDir>;
let path: string;
beforeEach(() => {
  tmp = tempDir();
  path = join(tmp.dir, "sessions", "s.jsonl");
});
afterEach(() => {
  disk.failAfterBytes = undefined;
  tmp.cleanup();
});

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

  it("a failed write is reported, not acknowledged, and leaves no half record for the next one to follow", () => {
    const { log } = SessionLog.open(path);
    log.append(msg("1"));
    const before = statSync(path).size;
    disk.failAfterBytes = 20; // the disk fills up part-way through the record
    let err: unknown;
    try {
      log.append(msg("2"));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(LogWriteError);
    expect(err).toMatchObject({ code: "LOG_WRITE_FAILED", errno: "ENOSPC", status: Status.RESOURCE_EXHAUSTED });
    expect((err as LogWriteError).message).toMatch(/could not persist/);
    expect(log.length).toBe(1);
    expect(statSync(path).size).toBe(before);
    disk.failAfterBytes = undefined;
    log.append(msg("3"));
    log.close();
    expect(SessionLog.read(path).records.map((r) => (r as { json: string }).json)).toEqual(["1", "3"]);
  });

  it("appends records that belong together with one fsync, and keeps none of them when the write fails", () => {
    const { log } = SessionLog.open(path);
    expect(log.appendAll([{ t: "turn_start", turn: 1, at: 1 }, msg("u1")])).toBe(0);
    const before = statSync(path).size;
    const firstLine = readFileSync(path, "utf8").indexOf("\n") + 1;
    disk.failAfterBytes = firstLine + 10; // the first record of the pair fits, the second is cut
    expect(() => log.appendAll([{ t: "turn_start", turn: 2, at: 2 }, msg("u2")])).toThrow(LogWriteError);
    expect(statSync(path).size).toBe(before);
    expect(log.length).toBe(2);
    disk.failAfterBytes = undefined;
    expect(log.appendAll([{ t: "turn_start", turn: 2, at: 3 }, msg("u2")])).toBe(2);
    log.close();
    expect(SessionLog.read(path).records.map((r) => r.t)).toEqual(["turn_start", "message", "turn_start", "message"]);
  });
});
