import { lstatSync } from "node:fs";
import { getJson, type Probe, type WaitHooks } from "./readiness.js";
import type { Progress } from "./progress-line.js";

export type Where = { socketPath: string } | { url: string };

/**
 * The model server's readiness: GET /health answers 200 once the model is
 * loaded. Until then the detail says what the server is doing, in the words
 * `up`'s progress line and its timeout use. `explicitSocket`: the person
 * named this socket (--upstream-socket), so a first answer that no waiting
 * will change (nobody listens, no permission) fails at once; later it is a
 * server restarting, and waited for.
 */
export function modelServerProbe(where: Where, explicitSocket = false): Probe {
  let first = explicitSocket;
  return async () => {
    const wasFirst = first;
    first = false;
    try {
      const r = await getJson(where, "/health");
      if (r.status === 200) return { ready: true };
      return { ready: false, detail: r.status === 503 ? unavailableWords(r.body) : `GET /health answered ${r.status}` };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const path = "socketPath" in where ? where.socketPath : "";
      if (wasFirst && code === "ECONNREFUSED")
        return {
          ready: false,
          fatal:
            "nobody is listening on this socket (ECONNREFUSED): a socket file left behind by a llama-server that is no longer running?",
        };
      if (wasFirst && code === "EACCES") return { ready: false, fatal: `no permission to connect to ${path} (EACCES)` };
      return { ready: false, detail: connectWords(code, err) };
    }
  };
}

/** What a 503 says: llama-server answers every route with "Loading model" until the model is in memory. */
function unavailableWords(body: unknown): string {
  const message = (body as { error?: { message?: unknown } } | undefined)?.error?.message;
  if (message === "Loading model") return "loading the model (503)";
  return `unavailable (503${typeof message === "string" ? `: ${message.slice(0, 100)}` : ""})`;
}

function connectWords(code: string | undefined, err: unknown): string {
  if (code === "ENOENT") return "no socket yet (ENOENT)";
  if (code === "ECONNREFUSED") return "nobody listening (ECONNREFUSED)";
  return `cannot connect (${code ?? String(err)})`;
}

/** Why a socket path the person gave cannot be a server's socket, in one line; undefined when it may be. */
export function socketPathProblem(path: string, flag: string): string | undefined {
  try {
    if (!lstatSync(path).isSocket()) return `${flag} ${path} is not a socket`;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return `${flag} ${path}: no such socket (is the path right, and is llama-server running?)`;
    return `${flag} ${path}: ${code ?? String(err)}`;
  }
  return undefined;
}

/**
 * A wait for the model server as `up` shows it: one progress line
 * ("waiting for llama-server at …: loading the model (503), 12 s of 900 s"),
 * and at the end either how long it took or a timeout naming --ready-timeout.
 */
export function modelWaitHooks(label: string, timeoutMs: number, progress?: Progress): WaitHooks {
  const total = Math.round(timeoutMs / 1000);
  const secs = (ms: number) => Math.floor(ms / 1000);
  // A server that answers within a second (the simulator, a loaded server) is not worth a line.
  let shown = false;
  return {
    pending: (state, ms) => {
      if (ms < 1000 || !progress) return;
      shown = true;
      progress.show(state, `waiting for ${label}: ${state || "no answer yet"}, ${secs(ms)} s of ${total} s`);
    },
    over: (ready, ms) => {
      if (shown) progress?.end(ready ? `${label}: ready after ${secs(ms)} s` : undefined);
      shown = false;
    },
    timedOut: (state) =>
      `not ready after ${total} s (--ready-timeout ${total}): ${state || "no answer"}` +
      (state.startsWith("loading") ? "; a model that takes longer to load needs a larger --ready-timeout" : ""),
  };
}
