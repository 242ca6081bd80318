#!/usr/bin/env node
// llama-sim --socket PATH | --port N [--slots 3] [--n-ctx N] [--slot-save-path DIR]
//           [--script file.json] [--model NAME] [--build-info S] [--chat-template-file F]
//           [--think-blocks all|after-last-user] [--loading-ms N]
//
// Unlike llama-server, which leaves its socket file behind on exit, the
// simulator removes it on SIGTERM/SIGINT: a test run should not leave stale
// sockets around. Tests of stale-socket handling create the stale file
// themselves.

import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { startLlamaSim, type LlamaSimOptions } from "./index.js";
import { parseScriptBody } from "./server.js";

const USAGE =
  "usage: llama-sim --socket PATH | --port N [--slots 3] [--n-ctx 32768] [--slot-save-path DIR] [--script file.json] " +
  "[--model NAME] [--build-info S] [--chat-template-file F] [--think-blocks all|after-last-user] [--loading-ms N]";

function int(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} needs a non-negative integer, got ${v}`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      socket: { type: "string" },
      port: { type: "string" },
      slots: { type: "string" },
      "n-ctx": { type: "string" },
      "slot-save-path": { type: "string" },
      script: { type: "string" },
      model: { type: "string" },
      "build-info": { type: "string" },
      "chat-template-file": { type: "string" },
      "think-blocks": { type: "string" },
      "loading-ms": { type: "string" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (!values.socket && values.port === undefined) throw new Error("one of --socket or --port is required");
  const tb = values["think-blocks"];
  if (tb !== undefined && tb !== "all" && tb !== "after-last-user")
    throw new Error("--think-blocks: all | after-last-user");
  const loadingMs = int("loading-ms", values["loading-ms"]);
  const opts: LlamaSimOptions = {
    ...(values.socket ? { socketPath: values.socket } : { port: int("port", values.port) ?? 0 }),
    ...(values.slots !== undefined ? { totalSlots: int("slots", values.slots)! } : {}),
    ...(values["n-ctx"] !== undefined ? { nCtx: int("n-ctx", values["n-ctx"])! } : {}),
    ...(values["slot-save-path"] ? { slotSavePath: values["slot-save-path"] } : {}),
    ...(values.model ? { modelPath: values.model } : {}),
    ...(values["build-info"] ? { buildInfo: values["build-info"] } : {}),
    ...(values["chat-template-file"] ? { chatTemplate: await readFile(values["chat-template-file"], "utf8") } : {}),
    ...(tb ? { thinkBlocks: tb } : {}),
    ...(loadingMs ? { loading: true } : {}),
  };
  const sim = await startLlamaSim(opts);
  if (values.script) {
    const { turns, slot } = parseScriptBody(JSON.parse(await readFile(values.script, "utf8")));
    for (const t of turns) sim.enqueue(t, slot);
  }
  if (loadingMs) setTimeout(() => sim.setLoading(false), loadingMs);
  const where = sim.socketPath ? `unix:${sim.socketPath}` : sim.url;
  console.log(`llama-sim listening on ${where} (slots ${opts.totalSlots ?? 3}, n_ctx ${opts.nCtx ?? 32768} per slot)`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    sim.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(`llama-sim: error while stopping on ${signal}: ${String(err)}`);
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((err: unknown) => {
  console.error(`llama-sim: ${err instanceof Error ? err.message : String(err)}`);
  console.error(USAGE);
  process.exit(1);
});
