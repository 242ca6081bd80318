import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../support/stack.js";

export const unitDir = join(repoRoot, "deploy", "systemd");

/** A systemd unit file as section -> key -> values (a key may repeat), with `\` continuations joined. */
export type Unit = Map<string, Map<string, string[]>>;

export function readUnit(name: string): Unit {
  const text = readFileSync(join(unitDir, name), "utf8").replace(/\\\n/g, " ");
  const unit: Unit = new Map();
  let section: Map<string, string[]> | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith(";")) continue;
    const head = /^\[(.+)\]$/.exec(line);
    if (head) {
      section = new Map();
      unit.set(head[1]!, section);
      continue;
    }
    const eq = line.indexOf("=");
    if (!section || eq < 0) throw new Error(`${name}: cannot parse line: ${line}`);
    const key = line.slice(0, eq).trim();
    section.set(key, [...(section.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return unit;
}

export function value(unit: Unit, section: string, key: string): string | undefined {
  return unit.get(section)?.get(key)?.at(-1);
}

/** ExecStart split into words; the units quote nothing, so whitespace splitting is exact. */
export function execStart(unit: Unit): string[] {
  const v = value(unit, "Service", "ExecStart");
  if (!v) throw new Error("no ExecStart");
  return v.split(/\s+/).filter(Boolean);
}

/** Environment=K=V lines as an object. */
export function environment(unit: Unit): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of unit.get("Service")?.get("Environment") ?? []) {
    for (const kv of e.split(/\s+/)) {
      const i = kv.indexOf("=");
      if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
    }
  }
  return env;
}
