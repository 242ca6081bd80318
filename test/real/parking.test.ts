import { afterEach, describe, expect, it } from "vitest";
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { RealLlama, haveRealLlama } from "./support/real-llama.js";
import { cliArgv, waitFor } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { doneOf, loopClient, newSession, turn } from "../support/loop-client.js";

/**
 * `boxmaker up --upstream-socket` against a real llama-server it did not
 * start: parking is on exactly when the server saves slots. Two sessions take
 * turns on slot 0; with parking the returning session's cache is restored
 * and its request reads only the new message.
 */
describe.skipIf(!haveRealLlama("session parking against the real llama-server"))("real llama-server: parking", () => {
  let tmp: ReturnType<typeof tempDir> | undefined;
  let llama: RealLlama | undefined;
  let up: ChildProcess | undefined;

  afterEach(async () => {
    if (up && up.exitCode === null && up.signalCode === null) {
      const exited = once(up, "exit");
      up.kill("SIGINT");
      await exited;
    }
    await llama?.close();
    tmp?.cleanup();
  });

  async function alternate(slotSave: boolean) {
    tmp = tempDir("bxr-park-");
    const dir = tmp.dir;
    llama = await new RealLlama({
      model: "answer",
      socketPath: join(dir, "llama.sock"),
      ctxSize: 3 * 8192,
      ...(slotSave ? { slotSavePath: join(dir, "slots") } : {}),
    }).start();
    const run = join(dir, "run");
    const args = ["up", "--upstream-socket", llama.socketPath, "--accept-server-contract", "--sandbox", "none"];
    // The workspace beside the runtime and state dirs: brokerd refuses a stack inside a workspace.
    const ws = join(dir, "ws");
    mkdirSync(ws);
    args.push("--runtime-dir", run, "--state-dir", join(dir, "state"), "--workspace", ws);
    const proc = spawn(process.execPath, cliArgv(args), { cwd: dir, env: { ...process.env, NO_COLOR: "1" } });
    up = proc;
    let stdout = "";
    let stderr = "";
    proc.stdout!.on("data", (b: Buffer) => (stdout += b.toString()));
    proc.stderr!.on("data", (b: Buffer) => (stderr += b.toString()));
    await waitFor(() => stdout.includes("export BOXMAKER_SOCKET=") || proc.exitCode !== null, 60_000, "boxmaker up");
    if (proc.exitCode !== null) throw new Error(`up exited ${proc.exitCode}: ${stderr}`);
    const parkingLine = /^ {2}parking\s+(.*)$/m.exec(stdout)?.[1] ?? "";
    const loopdConfig = JSON.parse(readFileSync(join(run, "loopd.json"), "utf8")) as { parking: { enabled: boolean } };

    const c = loopClient(join(run, "loopd.sock"));
    const a = await newSession(c, "a");
    const b = await newSession(c, "b");
    const long = (who: string) => `${who}: ${"context ".repeat(300)}`;
    const figures: { cacheN: number; promptN: number }[] = [];
    for (const [id, text] of [
      [a, long("A")],
      [b, long("B")],
      [a, "A again"],
      [b, "B again"],
    ] as const) {
      const done = doneOf(await turn(c, id, text));
      figures.push({ cacheN: done.timings!.cacheN, promptN: done.timings!.promptN });
    }
    c.close();
    return { parkingLine, enabled: loopdConfig.parking.enabled, figures };
  }

  it("is on when the server saves slots: the returning session reads only its new message", async () => {
    const { parkingLine, enabled, figures } = await alternate(true);
    expect(enabled).toBe(true);
    expect(parkingLine).toMatch(/^on/);
    const [aFirst, bFirst, aAgain, bAgain] = figures;
    for (const [first, again] of [
      [aFirst!, aAgain!],
      [bFirst!, bAgain!],
    ] as const) {
      expect(again.cacheN).toBeGreaterThanOrEqual(first.cacheN + first.promptN);
      expect(again.promptN).toBeLessThan(100);
    }
  }, 300_000);

  it("is off when the server cannot save slots: the returning session re-reads its prompt", async () => {
    const { parkingLine, enabled, figures } = await alternate(false);
    expect(enabled).toBe(false);
    expect(parkingLine).toMatch(/^off: the server was started without --slot-save-path/);
    const [aFirst, , aAgain] = figures;
    // Only the shared prefix (tools, system prompt) survives; A's own long message is read again.
    expect(aAgain!.promptN).toBeGreaterThan(300);
    expect(aAgain!.cacheN).toBeLessThan(aFirst!.cacheN + aFirst!.promptN);
  }, 300_000);
});
