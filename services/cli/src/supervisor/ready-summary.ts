import { join } from "node:path";
import type { Layout } from "./layout.js";
import type { LogRotationLimits } from "../log-rotation-plan.js";
import { formatBytes } from "../render/disk.js";
import { styleFor } from "../render/style.js";

/** What `up` says once the stack is ready: where each part is, and how another shell reaches it. */
export interface ReadyFacts {
  layout: Layout;
  procs: { name: string; pid: number | undefined; socket: string }[];
  /** The server `up` did not start itself. */
  upstream?: string;
  parking: string;
  template: string;
  workspaceRoots: string[];
  logRotation: LogRotationLimits;
}

export function readySummary(f: ReadyFacts): string[] {
  const { layout } = f;
  const rows: Array<[string, string]> = [];
  for (const p of f.procs)
    rows.push([p.name, `pid ${p.pid}  ${p.socket}  log ${join(layout.logDir, `${p.name}.log`)}`]);
  if (f.upstream !== undefined) rows.unshift(["upstream", f.upstream]);
  if (f.parking) rows.push(["parking", f.parking]);
  if (f.template) rows.push(["template", f.template]);
  rows.push(["workspace", f.workspaceRoots.join(", ")]);
  const { maxBytes, keep, compress } = f.logRotation;
  rows.push([
    "logs",
    `${layout.logDir}, each rotated past ${formatBytes(maxBytes)}, ${keep} older kept${compress && keep > 1 ? " (.2 on gzip-compressed)" : ""}`,
  ]);
  rows.push(["configs", layout.configDir]);
  rows.push(["state", `${layout.stateDir}  (sessions in ${join(layout.loopdState, "sessions")})`]);
  const w = Math.max(...rows.map(([k]) => k.length));
  return [
    "boxmaker up: the stack is ready",
    ...rows.map(([k, v]) => `  ${k.padEnd(w)}  ${v}`),
    "Stop it with Ctrl-C. From another shell:",
    `export BOXMAKER_SOCKET=${layout.sockets.loopd}`,
  ];
}

/** What inferproxy's template probe found (its Status waits for a probe under way); "" when it did not answer. */
export async function templateSentence(socketPath: string): Promise<string> {
  const { createClient, InferService } = await import("@boxmaker/common/client");
  const { probeSentence } = await import("../render/template-probe.js");
  const client = createClient(InferService, socketPath);
  try {
    return probeSentence((await client.status({}, { timeoutMs: 15_000 })).templateProbe, styleFor(process.stdout));
  } catch {
    return "";
  } finally {
    client.close();
  }
}
