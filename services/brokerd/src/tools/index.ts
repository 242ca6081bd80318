import type { ExtraCoreTool } from "../config-types.js";
import { type ExternalTool, ToolTable, type ToolDef } from "../tool-table.js";
import { grepBlob, readBlob } from "./blob-tools.js";
import { editFile } from "./edit-file.js";
import { fetchUrl } from "./fetch-url.js";
import { listDir } from "./list-dir.js";
import { callTool, findTool } from "./meta.js";
import { readFile } from "./read-file.js";
import { runCommand } from "./run-command.js";
import { searchFiles } from "./search-files.js";
import { spawnAgent } from "./spawn-agent.js";
import { updatePlan } from "./update-plan.js";
import { writeFile } from "./write-file.js";

/** The core set in array order. The order is part of the prompt prefix: changing it costs every cache. */
const CORE_TOOLS: readonly ToolDef[] = [
  readFile,
  listDir,
  searchFiles,
  writeFile,
  editFile,
  runCommand,
  findTool,
  callTool,
  spawnAgent,
  updatePlan,
];
const EXTENDED_BUILTINS: readonly ToolDef[] = [readBlob, grepBlob, fetchUrl];

/** A core tool another daemon runs, declared in config; brokerd only lists it. */
function externalCore(t: ExtraCoreTool): ExternalTool {
  return {
    name: t.name,
    description: t.description,
    parameters: t.parameters,
    risk: "exec",
    core: true,
    kind: "external",
    origin: "config",
  };
}

export function builtinTable(extraCore: readonly ExtraCoreTool[]): ToolTable {
  const table = new ToolTable();
  for (const t of CORE_TOOLS) table.add(t);
  for (const t of extraCore) table.add(externalCore(t));
  for (const t of EXTENDED_BUILTINS) table.add(t);
  return table;
}
