import { Worker } from "node:worker_threads";
import { Refused } from "../errors.js";
import { ToolError } from "../errors.js";
import { messageOf } from "@boxmaker/common";

export const MAX_PATTERN_LENGTH = 500;
/** Lines longer than this are matched on their first part only; minified bundles would otherwise dominate. */
const MAX_LINE = 4096;

export interface RegexJob {
  pattern: string;
  ignoreCase: boolean;
  maxMatches: number;
  /** Either files (already path-checked by the caller) or one text. */
  files?: Array<{ rel: string; abs: string }>;
  /** The workspace root's fd: files are opened component by component below it, O_NOFOLLOW. */
  rootFd?: number;
  text?: string;
  maxFileBytes: number;
}

export interface RegexHit {
  rel: string;
  line: number;
  text: string;
}

export interface RegexResult {
  hits: RegexHit[];
  truncated: boolean;
  filesScanned: number;
}

// Plain JS run with eval so it works from both the TypeScript sources (tests) and dist.
const WORKER = `
const { parentPort, workerData: job } = require("node:worker_threads");
const fs = require("node:fs");
const re = new RegExp(job.pattern, job.ignoreCase ? "i" : "");
const hits = [];
let truncated = false, filesScanned = 0;
function scan(rel, text) {
  const lines = text.split("\\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].length > ${MAX_LINE} ? lines[i].slice(0, ${MAX_LINE}) : lines[i];
    if (re.test(line)) {
      if (hits.length >= job.maxMatches) { truncated = true; return false; }
      hits.push({ rel, line: i + 1, text: line.length > 500 ? line.slice(0, 500) + " […]" : line });
    }
  }
  return true;
}
const C = fs.constants;
function openBelow(rootFd, rel) {
  const parts = rel.split("/").filter((c) => c !== "" && c !== ".");
  if (parts.length === 0 || parts.includes("..")) throw new Error("bad path");
  let cur = rootFd;
  try {
    for (let i = 0; i < parts.length - 1; i++) {
      const next = fs.openSync("/proc/self/fd/" + cur + "/" + parts[i], C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
      if (cur !== rootFd) fs.closeSync(cur);
      cur = next;
    }
    return fs.openSync("/proc/self/fd/" + cur + "/" + parts[parts.length - 1], C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } finally {
    if (cur !== rootFd) fs.closeSync(cur);
  }
}
if (job.text !== undefined) scan("", job.text);
else for (const f of job.files) {
  let fd;
  try { fd = openBelow(job.rootFd, f.rel); } catch { continue; }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.size > job.maxFileBytes) continue;
    const buf = fs.readFileSync(fd);
    if (buf.subarray(0, 8192).includes(0)) continue;
    filesScanned++;
    if (!scan(f.rel, buf.toString("utf8"))) break;
  } finally { fs.closeSync(fd); }
}
parentPort.postMessage({ hits, truncated, filesScanned });
`;

/** Compiles the pattern here first so a syntax error is the model's message, not a worker crash. */
export function checkPattern(pattern: string, ignoreCase: boolean): void {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new ToolError(`the pattern is ${pattern.length} characters; the limit is ${MAX_PATTERN_LENGTH}`);
  }
  try {
    new RegExp(pattern, ignoreCase ? "i" : "");
  } catch (err) {
    throw new ToolError(`invalid regular expression: ${messageOf(err)}`, { cause: err });
  }
}

/**
 * Runs a regex search in a worker thread that is terminated after `timeoutMs`:
 * JavaScript regexes cannot be interrupted, and a catastrophic pattern must not
 * stall every other call brokerd is serving.
 */
export function runRegex(job: RegexJob, timeoutMs: number, signal?: AbortSignal): Promise<RegexResult> {
  checkPattern(job.pattern, job.ignoreCase);
  return new Promise((resolve, reject) => {
    const w = new Worker(WORKER, { eval: true, workerData: job });
    const finish = (fn: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      void w.terminate();
      fn();
    };
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(
            new Refused(
              "limit:regex-time",
              `the search ran past ${timeoutMs} ms and was stopped; use a simpler pattern or a narrower path`,
            ),
          ),
        ),
      timeoutMs,
    );
    const onAbort = () => finish(() => reject(signal!.reason));
    signal?.addEventListener("abort", onAbort, { once: true });
    w.once("message", (r: RegexResult) => finish(() => resolve(r)));
    w.once("error", (err) => finish(() => reject(new ToolError(`search failed: ${err.message}`))));
  });
}
