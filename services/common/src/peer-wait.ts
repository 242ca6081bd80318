import * as grpc from "@grpc/grpc-js";
import { connect } from "node:net";
import { RpcError, Status } from "./errors.js";

// Daemon-to-daemon calls wait for a peer that is coming back (restarted by
// systemd or `boxmaker up` within seconds) instead of failing while their
// channel sits in reconnect backoff; a peer that stays away fails the call
// with what is wrong with its socket.

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Why nothing answers on `path`, in words: the errno a plain connect gets, or that it accepted after all. */
function socketProblem(path: string, timeoutMs = 500): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(path);
    const done = (why: string) => {
      clearTimeout(t);
      s.destroy();
      resolve(why);
    };
    const t = setTimeout(() => done("the connection is not accepted (a stopped process?)"), timeoutMs);
    s.once("connect", () => done("it accepts connections but gRPC did not get through (another program on the path?)"));
    s.once("error", (err: NodeJS.ErrnoException) =>
      done(
        err.code === "ENOENT"
          ? "ENOENT: there is no socket file (is it running?)"
          : err.code === "ECONNREFUSED"
            ? "ECONNREFUSED: nothing listens on it (it died and left the socket file)"
            : `${err.code ?? "error"}: ${err.message}`,
      ),
    );
  });
}

/**
 * Waits until `raw`'s channel is connected, for at most `waitMs` (and not past
 * `deadline`); a signal that aborts ends the wait with CANCELLED. An idle or
 * backing-off channel is asked to connect now. Fails UNAVAILABLE naming the
 * peer, its socket and what a connect there gets.
 */
export async function waitForPeer(
  raw: grpc.Client,
  peer: { name: string; socketPath: string },
  waitMs: number,
  deadline: number | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  const channel = raw.getChannel();
  if (channel.getConnectivityState(true) === grpc.connectivityState.READY) return;
  const started = Date.now();
  const until = Math.min(started + waitMs, deadline ?? Number.POSITIVE_INFINITY);
  const ready = await new Promise<boolean | "aborted">((resolve) => {
    const onAbort = () => resolve("aborted");
    signal?.addEventListener("abort", onAbort, { once: true });
    raw.waitForReady(until, (err) => {
      signal?.removeEventListener("abort", onAbort);
      resolve(!err);
    });
  });
  if (ready === "aborted") throw new RpcError(Status.CANCELLED, "cancelled on the client");
  if (ready) return;
  throw new RpcError(
    Status.UNAVAILABLE,
    `${peer.name} at ${peer.socketPath} did not come back within ${seconds(Date.now() - started)}: ${await socketProblem(peer.socketPath)}`,
  );
}
