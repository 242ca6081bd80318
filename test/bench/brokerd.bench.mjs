// brokerd's in-process decision + execution path, without gRPC: Broker.call()
// as the service handler runs it (argument parsing, schema validation, path
// resolution, policy, execution, audit line). Socket and protobuf costs are
// not included. Needs `npx tsc -b services/brokerd` first.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import { ToolDecision } from "../../services/common/dist/index.js";
import { Broker, parseBrokerConfig } from "../../services/brokerd/dist/index.js";
import { nowMs, p50, p99 } from "./stats.mjs";

export const timeLimitS = 60;

const VERBS = ["create", "list", "get", "update", "delete", "search", "sync", "export", "import", "archive"];
const NOUNS = [
  "issue",
  "ticket",
  "page",
  "invoice",
  "user",
  "repo",
  "branch",
  "alert",
  "dashboard",
  "calendar",
  "event",
  "file",
  "message",
  "channel",
  "build",
  "deploy",
  "metric",
  "report",
  "contact",
  "order",
];
const SERVERS = ["github", "jira", "notion", "slack", "stripe"];

function syntheticTool(i) {
  const verb = VERBS[i % VERBS.length];
  const noun = NOUNS[Math.floor(i / VERBS.length) % NOUNS.length];
  const server = SERVERS[Math.floor(i / (VERBS.length * NOUNS.length)) % SERVERS.length];
  return {
    name: `${server}.${verb}_${noun}_${i}`,
    description: `${verb[0].toUpperCase()}${verb.slice(1)} a ${noun} in ${server} (variant ${i}); returns the ${noun} as JSON.`,
    parameters: {
      type: "object",
      properties: { [`${noun}_id`]: { type: "string" }, limit: { type: "integer" }, query: { type: "string" } },
    },
    risk: "read",
    core: false,
    kind: "mcp",
    origin: `mcp:${server}`,
    plan: () => ({ paths: [], execute: async () => ({ text: "ok", isError: false }) }),
  };
}

export default async function (emit) {
  const dir = mkdtempSync(join(tmpdir(), "bx-bench-"));
  const ws = join(dir, "ws");
  mkdirSync(ws);
  writeFileSync(join(ws, "notes.txt"), Array.from({ length: 120 }, (_, i) => `line ${i + 1} of some notes`).join("\n"));
  const log = pino({ level: "info" }, pino.destination({ dest: "/dev/null", sync: false }));
  const broker = await Broker.open(
    parseBrokerConfig({ state_dir: join(dir, "state"), workspace_roots: [ws], log_level: "info" }),
    { log },
  );
  for (let i = 0; i < 1000; i++) broker.table.add(syntheticTool(i));

  const queries = [
    "create an issue in github",
    "list slack channels",
    "export invoice report",
    "search jira tickets",
    "delete a calendar event",
    "sync notion pages",
    "stripe order",
    "get user",
    "archive build",
    "metric dashboard",
  ];
  let n = 0;
  const call = (name, args) =>
    broker.call({ sessionId: "bench", callId: String(++n), name, argumentsJson: JSON.stringify(args) });

  const measure = async (iterations, fn) => {
    for (let i = 0; i < 200; i++) await fn(i); // warm-up: JIT, index build, file cache
    const times = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = nowMs();
      await fn(i);
      times.push((nowMs() - t0) * 1000);
    }
    return times;
  };

  const find = await measure(3000, async (i) => {
    const r = await call("find_tool", { query: queries[i % queries.length] });
    if (r.decision !== ToolDecision.ALLOWED || !r.content.includes("call_tool"))
      throw new Error(`find_tool failed: ${r.content}`);
  });
  const read = await measure(5000, async () => {
    const r = await call("call_tool", {
      name: "read_file",
      arguments: { path: "notes.txt", start_line: 10, end_line: 20 },
    });
    if (r.decision !== ToolDecision.ALLOWED || r.isError) throw new Error(`read failed: ${r.content}`);
  });

  emit("find_tool_us_p50", p50(find), "us");
  emit("find_tool_us_p99", p99(find), "us");
  emit("call_tool_read_us_p50", p50(read), "us");
  emit("call_tool_read_us_p99", p99(read), "us");
  await broker.close();
  rmSync(dir, { recursive: true, force: true });
}
