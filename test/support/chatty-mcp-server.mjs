#!/usr/bin/env node
// An MCP server over stdio that talks a lot on stderr, which brokerd logs at
// debug level ("mcp stderr"): the way a daemon's log under `boxmaker up` grows
// fastest. It writes ROUNDS rounds of BYTES bytes, each a few KiB lines saying
// `chatty round R line L`; after each round it waits until the log it is
// told of was rotated since the round began (LOG.1 is a new file) and is
// within LIMIT again, so the test's sizes do not depend on how fast anything
// runs. Its progress is kept
// in PROGRESS, so a copy started by a restarted brokerd goes on from there.
//   chatty-mcp-server.mjs LOG LIMIT ROUNDS BYTES PROGRESS
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [log, limitArg, roundsArg, bytesArg, progress] = process.argv.slice(2);
const limit = Number(limitArg);
const rounds = Number(roundsArg);
const bytes = Number(bytesArg);

const server = new Server({ name: "chatty", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [] }));
await server.connect(new StdioServerTransport());
// brokerd gone (killed): so is this copy; the restarted brokerd starts another.
process.stdin.on("close", () => process.exit(0));

const stat = (f) => {
  try {
    return statSync(f);
  } catch {
    return { size: 0, ino: 0 };
  }
};
const write = (text) => new Promise((resolve) => process.stderr.write(text, resolve));

let round = existsSync(progress) ? Number(readFileSync(progress, "utf8")) : 0;
const pad = "x".repeat(2000);
while (round < rounds) {
  const before = stat(`${log}.1`).ino;
  for (let line = 0; line * 2048 < bytes; line++) {
    await write(`chatty round ${round} line ${line} ${pad}\n`);
    // One line per chunk brokerd reads, so each becomes one log record.
    await sleep(2);
  }
  while (stat(`${log}.1`).ino === before || stat(log).size > limit) await sleep(50);
  round++;
  writeFileSync(progress, String(round));
}
