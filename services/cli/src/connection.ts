import { createConnection } from "node:net";
import { UsageError } from "./errors.js";
import type { GlobalOptions } from "./global-options.js";
import type { SocketChoice } from "./socket-choice.js";

/**
 * Resolves once something accepts connections on the socket. A socket file
 * left behind by a dead daemon would otherwise surface as a gRPC UNAVAILABLE
 * that looks just like loopd reporting a dead brokerd.
 */
function probe(choice: SocketChoice, record: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = createConnection(choice.path);
    c.once("connect", () => {
      c.destroy();
      resolve();
    });
    c.once("error", (err: NodeJS.ErrnoException) => {
      c.destroy();
      // Loaded only here: a CLI that connects never pays for saying why it could not.
      void import("./unreachable.js").then(({ unreachable }) => unreachable(choice, err, record)).then(reject, reject);
    });
  });
}

/** --timeout SECONDS, checked: a positive number. */
export function parseTimeout(flag: string | undefined): number | undefined {
  if (flag === undefined) return undefined;
  const s = Number(flag);
  if (!Number.isFinite(s) || s <= 0)
    throw new UsageError(`--timeout needs a positive number of seconds, not "${flag}"`);
  return Math.ceil(s * 1000);
}

/** A typed LoopService client; loaded lazily so `--help` never pays for gRPC. */
async function connect({ socket, stackRecord, timeoutMs }: GlobalOptions) {
  const choice = await socket();
  const [{ createClient, LoopService }] = await Promise.all([
    import("@boxmaker/common/client"),
    probe(choice, stackRecord),
  ]);
  return createClient(LoopService, choice.path, { ...callLimits(timeoutMs), peer: "loopd" });
}

/**
 * Runs fn with a client of loopd and closes it however fn ends: the one place
 * a command opens a connection, so none can leave a channel holding the
 * process open after an error.
 */
export async function withClient<T>(globals: GlobalOptions, fn: (client: LoopClient) => Promise<T>): Promise<T> {
  const client = await connect(globals);
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

/**
 * Every call ends even if loopd never answers: 30 s for a unary reply, 30 s
 * for a stream's headers, 10 s for the connection to speak HTTP/2, or
 * --timeout for the first two (and at most it for the third). A few calls
 * do real work before they answer — approving a command runs it
 * (sandbox.timeout_ms, 2 min unless raised), compacting asks the model for a
 * summary, an MCP login asks an authorization server — and `attach --follow`
 * on an idle session gets no headers until the next turn starts.
 */
function callLimits(timeoutMs: number | undefined) {
  const waitMs = timeoutMs ?? 30_000;
  return {
    unaryTimeoutMs: waitMs,
    headersTimeoutMs: waitMs,
    connectTimeoutMs: Math.min(waitMs, 10_000),
    methods: {
      decideProposal: { timeoutMs: 15 * 60_000 },
      compactSession: { timeoutMs: 15 * 60_000 },
      // brokerd asks the MCP server's authorization server first (loopd allows it 2 min).
      startMcpLogin: { timeoutMs: 3 * 60_000 },
      finishMcpLogin: { timeoutMs: 3 * 60_000 },
      follow: { headersTimeoutMs: 0 },
    },
  } as const;
}

export type LoopClient = Awaited<ReturnType<typeof connect>>;
