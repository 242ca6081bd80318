// The trust boundary under attack, counted: generated hostile tool calls,
// command lines and paths against a planted workspace, plus a real race (a
// directory flipping to a symlink to outside while calls run). Prints how many
// inputs were tried and how many escaped or crashed brokerd (both must be 0).
import fc from "fast-check";
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pino } from "pino";
import { Broker } from "../../services/brokerd/dist/broker.js";
import { parseBrokerConfig } from "../../services/brokerd/dist/config.js";
import { decide } from "../../services/brokerd/dist/policy/rules.js";
import {
  leaked,
  newCounts,
  outsideIntact,
  pathArb,
  plantWorkspace,
  rmLineArb,
  toolCallArb,
} from "../../services/brokerd/test/adversarial/harness.js";
import { tempDir } from "../support/tmp.js";
import { nowMs } from "./stats.mjs";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 240;

async function open(dir: string, name: string, setup: (d: { ws: string; outside: string }) => void) {
  const ws = join(dir, `${name}-ws`);
  const outside = join(dir, `${name}-outside`);
  mkdirSync(ws);
  mkdirSync(outside);
  setup({ ws, outside });
  const config = parseBrokerConfig({
    socket: join(dir, `${name}.sock`),
    state_dir: join(dir, `${name}-state`),
    workspace_roots: [ws],
    log_level: "silent",
    sandbox: { mode: "none" },
    policy: {
      rules: [
        { tool: "write_file", effect: "allow" },
        { tool: "edit_file", effect: "allow" },
        { tool: "run_command", effect: "deny" },
      ],
    },
  });
  const broker = await Broker.open(config, { log: pino({ level: "silent" }) });
  let n = 0;
  const call = (tool: string, args: unknown) =>
    broker.call({ sessionId: "b", callId: `c${++n}`, name: tool, argumentsJson: JSON.stringify(args) });
  return { ws, outside, broker, call };
}

export default async function (emit: Emit): Promise<void> {
  const tmp = tempDir("bxa-");
  const c = newCounts();
  try {
    // 1. Hostile tool calls and paths.
    const b = await open(tmp.dir, "p", plantWorkspace);
    const t0 = nowMs();
    const calls = [
      ...fc.sample(toolCallArb(b.ws, b.outside), 3000),
      ...fc
        .sample(fc.tuple(pathArb(b.ws, b.outside), fc.constantFrom("read_file", "list_dir", "write_file")), 2000)
        .map(([path, name]) => ({
          name,
          args: name === "write_file" ? { path, content: "w" } : { path },
        })),
    ];
    for (const { name, args } of calls) {
      c.inputs++;
      try {
        const out = await b.call(name, args);
        if (leaked(out)) c.escapes++;
        if (out.rule === "tool:crashed") c.crashes++;
      } catch {
        c.crashes++;
      }
    }
    if (!outsideIntact(b.outside)) c.escapes++;
    emit("tool_calls_per_s", calls.length / ((nowMs() - t0) / 1000), "calls/s");
    await b.broker.close();

    // 2. Command lines that run rm behind wrappers and constructs, against a deny on rm.
    const noRm = [{ name: "no-rm", tool: "run_command", effect: "deny" as const, command_prefixes: ["rm"] }];
    for (const line of fc.sample(rmLineArb(), 3000)) {
      c.inputs++;
      const d = decide(
        noRm,
        { read: "allow", write: "ask", exec: "allow", network: "deny" },
        { tool: "run_command", risk: "exec", paths: [], command: line, hosts: [] },
      );
      if (d.effect === "allow") c.escapes++;
    }

    // 3. The race: d flips between a real directory and a symlink to outside.
    const r = await open(tmp.dir, "r", ({ ws, outside }) => {
      mkdirSync(join(ws, "d"));
      writeFileSync(join(ws, "d", "f.txt"), "inside\n");
      writeFileSync(join(outside, "f.txt"), "OUTSIDE-7c1e\n");
    });
    const flipper = spawn(
      process.execPath,
      [
        "-e",
        `const fs=require("fs");const [w,o]=process.argv.slice(1);fs.symlinkSync(o,w+"/l");for(;;){try{fs.renameSync(w+"/d",w+"/r");fs.renameSync(w+"/l",w+"/d");fs.renameSync(w+"/d",w+"/l");fs.renameSync(w+"/r",w+"/d")}catch{}}`,
        r.ws,
        r.outside,
      ],
      { stdio: "ignore" },
    );
    const RACE = 2000;
    let raceEscapes = 0;
    let refused = 0;
    for (let i = 0; i < RACE; i += 4) {
      const outs = await Promise.all([
        r.call("read_file", { path: "d/f.txt" }),
        r.call("list_dir", { path: "d" }),
        r.call("write_file", { path: `d/w${i}.txt`, content: "w" }),
        r.call("read_file", { path: "d/f.txt", start_line: 1, end_line: 1 }),
      ]);
      for (const o of outs) {
        if (o.content.includes("OUTSIDE-7c1e")) raceEscapes++;
        if (o.isError) refused++;
      }
    }
    flipper.kill("SIGKILL");
    const outsideWrites = readdirSync(r.outside).filter((f) => f !== "f.txt").length;
    await r.broker.close();

    emit("generated_inputs", c.inputs, "inputs");
    // An escape: content from outside the workspace or from a secret in a result, or a write outside.
    emit("escapes", c.escapes, "count");
    emit("crashes", c.crashes, "count");
    emit("race_iterations", RACE, "calls");
    emit("race_escapes", raceEscapes + outsideWrites, "count");
    emit("race_refused_mid_swap", refused, "calls");
  } finally {
    tmp.cleanup();
  }
}
