import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { connect } from "node:net";
import { NotReadyError } from "../errors.js";

/**
 * How `boxmaker up` tells that a process can serve. Not through NOTIFY_SOCKET:
 * the daemons send READY=1 by running systemd's `systemd-notify` binary,
 * which machines without systemd do not have, and Node cannot bind the
 * datagram socket to receive it. Instead each probe checks the condition the
 * daemon's READY=1 stands for:
 *  - brokerd, loopd: bind their socket after all start-up work, so "the
 *    socket accepts a connection" is the same moment as READY=1;
 *  - inferproxy: binds first (Status must answer while llama-server loads)
 *    and sends READY=1 once its self-test passed, so the probe asks Status;
 *  - llama-server: GET /health answers 200 once the model is loaded.
 */
type ProbeResult = { ready: true } | { ready: false; fatal?: string; detail?: string };
export type Probe = () => Promise<ProbeResult>;

/** What a caller sees of a wait while it lasts (`up`'s progress line for the model server). */
export interface WaitHooks {
  /** After each probe that found it not ready yet, with the probe's detail. */
  pending(detail: string, elapsedMs: number): void;
  /** The wait is over, ready or not. */
  over(ready: boolean, elapsedMs: number): void;
  /** The error's text (after `what: `) when the time is up. */
  timedOut(lastDetail: string, timeoutMs: number): string;
}

/** Polls `probe` until ready; rejects on timeout, a fatal probe result, or `signal` (the process exited). */
export async function waitReady(
  probe: Probe,
  opts: { timeoutMs: number; intervalMs?: number; signal?: AbortSignal; what: string; hooks?: WaitHooks },
): Promise<void> {
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  const hooks = opts.hooks;
  let last = "";
  let ready = false;
  try {
    for (;;) {
      if (opts.signal?.aborted) throw new NotReadyError(`${opts.what}: ${String(opts.signal.reason ?? "aborted")}`);
      const r = await probe().catch((err: unknown): ProbeResult => ({ ready: false, detail: String(err) }));
      if (r.ready) {
        ready = true;
        return;
      }
      if (r.fatal) throw new NotReadyError(`${opts.what}: ${r.fatal}`);
      last = r.detail ?? last;
      if (Date.now() > deadline) {
        throw new NotReadyError(
          `${opts.what}: ${hooks ? hooks.timedOut(last, opts.timeoutMs) : `not ready after ${opts.timeoutMs} ms${last ? ` (${last})` : ""}`}`,
        );
      }
      hooks?.pending(last, Date.now() - started);
      await sleep(opts.intervalMs ?? 100, opts.signal);
    }
  } finally {
    hooks?.over(ready, Date.now() - started);
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

export function socketAccepts(path: string, timeoutMs = 1000): Probe {
  return () =>
    new Promise((resolve) => {
      const s = connect(path);
      const done = (r: ProbeResult) => {
        clearTimeout(t);
        s.destroy();
        resolve(r);
      };
      const t = setTimeout(() => done({ ready: false, detail: "connect timed out" }), timeoutMs);
      s.once("connect", () => done({ ready: true }));
      s.once("error", (err: NodeJS.ErrnoException) => done({ ready: false, detail: err.code ?? err.message }));
    });
}

/** GET a JSON endpoint of llama-server over its Unix socket or a URL. */
export function getJson(
  where: { socketPath: string } | { url: string },
  path: string,
  timeoutMs = 5000,
): Promise<{ status: number; body: unknown }> {
  return requestJson(where, "GET", path, undefined, timeoutMs);
}

/** POST a JSON body to llama-server over its Unix socket or a URL. */
export function postJson(
  where: { socketPath: string } | { url: string },
  path: string,
  body: unknown,
  timeoutMs = 5000,
): Promise<{ status: number; body: unknown }> {
  return requestJson(where, "POST", path, JSON.stringify(body), timeoutMs);
}

function requestJson(
  where: { socketPath: string } | { url: string },
  method: "GET" | "POST",
  path: string,
  payload: string | undefined,
  timeoutMs: number,
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const target =
      "url" in where
        ? (() => {
            const u = new URL(path, where.url);
            return { protocol: u.protocol, hostname: u.hostname, port: u.port, path: u.pathname + u.search };
          })()
        : { socketPath: where.socketPath, path, host: "llama" };
    const request = "protocol" in target && target.protocol === "https:" ? httpsRequest : httpRequest;
    const headers =
      payload === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) };
    const req = request({ ...target, method, headers, timeout: timeoutMs }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (text += d));
      res.on("end", () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON: keep the text for the message.
        }
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on("timeout", () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on("error", reject);
    req.end(payload);
  });
}

/** inferproxy is ready when its self-test passed; a failed self-test will not pass by waiting. */
export function inferproxySelfTestPassed(socketPath: string): Probe {
  const accepts = socketAccepts(socketPath);
  return async () => {
    const a = await accepts();
    if (!a.ready) return a;
    const { createClient, InferService } = await import("@boxmaker/common/client");
    const client = createClient(InferService, socketPath);
    try {
      const s = await client.status({}, { timeoutMs: 2000 });
      const t = s.selfTest;
      if (t?.passed) return { ready: true };
      if (t?.ran) return { ready: false, fatal: contractRefusal(t.mismatches) };
      return { ready: false, detail: `llama-server is ${s.serverState || "unknown"}` };
    } finally {
      client.close();
    }
  };
}

/** Why `up` refuses a server, and how to take it anyway. */
export function contractRefusal(mismatches: readonly string[]): string {
  return (
    `llama-server does not match the contract: ${mismatches.join("; ")}. ` +
    "If this is the server you mean to use, run `boxmaker up` again with --accept-server-contract to take its template, n_ctx and slots as they are"
  );
}
