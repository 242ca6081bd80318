import { describe, expect, it } from "vitest";
import { lastErrorLine } from "../src/supervisor/last-words.js";

describe("a daemon's last error line, as `up` reads it from the log", () => {
  const info = (msg: string) => JSON.stringify({ level: 30, time: 1, daemon: "loopd", msg });

  it("is runMain's plain line after the start's info logs", () => {
    const log = [info("sessions restored"), '/run/loopd.json: key "budgetz" is not a known setting', ""].join("\n");
    expect(lastErrorLine(log)).toBe('/run/loopd.json: key "budgetz" is not a known setting');
  });

  it("is a stack trace's first line, not its frames", () => {
    const log = ["fatal: Error: boom", "    at main (file:///x/main.js:1:1)", "    at run (node:internal)"].join("\n");
    expect(lastErrorLine(log)).toBe("fatal: Error: boom");
  });

  it("is pino's message (and its err's) at error or fatal, skipping lower levels after it", () => {
    const err = JSON.stringify({ level: 50, msg: "cannot bind", err: { message: "EACCES" } });
    expect(lastErrorLine([err, info("stopping"), JSON.stringify({ level: 40, msg: "slow" })].join("\n"))).toBe(
      "cannot bind: EACCES",
    );
  });

  it("is nothing when the daemon wrote no error", () => {
    expect(lastErrorLine([info("ready"), "--- 2026 boxmaker up: starting node loopd", ""].join("\n"))).toBeUndefined();
    expect(lastErrorLine("")).toBeUndefined();
  });
});
