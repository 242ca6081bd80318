import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../src/audit.js";
import { BlobStore } from "../src/blobs.js";
import { Checkpoints } from "../src/checkpoints.js";
import { parseBrokerConfig } from "../src/config.js";
import { Disclosure } from "../src/disclosure.js";
import { ToolSearch } from "../src/find-tool.js";
import { PathGuard } from "../src/policy/paths.js";
import { ResultSecrets } from "../src/secrets/result-secrets.js";
import { Sandbox } from "../src/sandbox.js";
import { ProposalStore } from "../src/staging.js";
import { ToolTable, type Plan, type PlannedTool, type ToolDef } from "../src/tool-table.js";
import { callTool, findTool } from "../src/tools/meta.js";
import { tempDir } from "../../../test/support/tmp.js";
import { silent } from "./helpers.js";

/** A tool whose plan and execution are recorded, for pipeline and approval tests without real tools. */
export interface FakeTool extends PlannedTool {
  planned: unknown[];
  executed: number;
  /** The checks the next plan reports (staging compares them at approval). */
  checks: Record<string, string>;
  result: { text: string; isError: boolean };
}

export function fakeTool(
  name: string,
  risk: PlannedTool["risk"],
  core = true,
  kind: PlannedTool["kind"] = "builtin",
): FakeTool {
  const t: FakeTool = {
    name,
    description: `${name} for tests`,
    parameters: { type: "object", properties: { path: { type: "string" } }, additionalProperties: true },
    risk,
    core,
    kind,
    origin: "test",
    planned: [],
    executed: 0,
    checks: {},
    result: { text: `${name} ran`, isError: false },
    plan(args: unknown): Plan {
      t.planned.push(args);
      return {
        paths: [],
        preview: `${name} preview`,
        checks: { ...t.checks },
        execute: async () => {
          t.executed++;
          return t.result;
        },
      };
    },
  };
  return t;
}

/** The stores and wiring the call pipeline and approvals need, on a temp dir, with no socket and no MCP. */
export function fakeDeps(tools: ToolDef[], config: Record<string, unknown> = {}) {
  const t = tempDir("bxu-");
  const ws = join(t.dir, "ws");
  mkdirSync(ws);
  const cfg = parseBrokerConfig({
    socket: join(t.dir, "b.sock"),
    state_dir: join(t.dir, "state"),
    workspace_roots: [ws],
    log_level: "silent",
    sandbox: { mode: "none", allow_unsandboxed: true },
    ...config,
  });
  const table = new ToolTable();
  table.add(findTool);
  table.add(callTool);
  for (const tool of tools) table.add(tool);
  const guard = new PathGuard([ws], [], []);
  const audit: AuditRecord[] = [];
  const deps = {
    config: cfg,
    guard,
    secrets: new ResultSecrets(cfg.secrets.allow, guard),
    blobs: new BlobStore(join(t.dir, "blobs")),
    sandbox: Sandbox.probe(cfg.sandbox, [ws], []),
    log: silent,
    table,
    disclosure: new Disclosure(),
    search: new ToolSearch(table),
    proposals: new ProposalStore(join(t.dir, "proposals")),
    checkpoints: new Checkpoints(join(t.dir, "checkpoints")),
    record: (r: AuditRecord) => audit.push(r),
  };
  return { deps, audit, cleanup: t.cleanup };
}
