import { createServer, type Server } from "node:http";
import { RpcError, Status } from "@boxmaker/common/client";
import type { LoopClient } from "./connection.js";
import { foldLine, widthOf, wrapWords } from "./render/columns.js";
import { pageOf } from "./render/server-question.js";
import type { Style } from "./render/style.js";
import { writeText } from "./render/terminal-safe.js";
import { readLine } from "./terminal-line.js";

/** How long the CLI waits for the browser or a paste: the authorization server's page stays valid as long in brokerd. */
const LOGIN_WAIT_MS = 10 * 60_000;

const BACK_PAGE =
  "<!doctype html><meta charset=utf-8><title>Boxmaker</title><p>Boxmaker has the answer. You can close this tab and go back to the terminal.</p>";

export class LoginAbandoned extends Error {}

/** Where the answer came from: the browser itself (the loopback listener) or the person's paste. */
type Answer = { from: "browser" | "paste"; callback: string };

/**
 * `boxmaker mcp login NAME`: brokerd makes the authorization page; the person
 * opens it (Boxmaker never opens a browser: the page is shown whole, with its
 * host, as every page Boxmaker asks a person to open); the authorization
 * server sends the browser back to a loopback address this command listens
 * on, or, when the browser runs on another machine, the person pastes the
 * address it ended on. The code goes to brokerd, which keeps the tokens.
 */
export async function mcpLogin(
  client: Pick<LoopClient, "startMcpLogin" | "finishMcpLogin">,
  server: string,
  io: { input: NodeJS.ReadStream; err: NodeJS.WriteStream; style: Style },
): Promise<string> {
  const start = await client.startMcpLogin({ server });
  if (!start.authorizationUrl) return start.status;
  const width = widthOf(io.err);
  writeText(io.err, loginFrame(server, start.authorizationUrl, io.style, width));
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), LOGIN_WAIT_MS);
  const listener = await listenForBrowser(start.redirectUri).catch((err: Error) => {
    const why = `(cannot wait for the browser at ${start.redirectUri}: ${err.message})`;
    writeText(io.err, `${wrapWords(why, width).map(io.style.dim).join("\n")}\n`);
    return undefined;
  });
  const canPaste = io.input.isTTY === true;
  if (!listener && !canPaste) {
    clearTimeout(timer);
    throw new LoginAbandoned("nowhere to take the answer: no terminal to paste into and no loopback port to listen on");
  }
  const say = (text: string) => writeText(io.err, `${wrapWords(text, width).join("\n")}\n`);
  if (listener) say(`Waiting for the browser to come back to ${start.redirectUri} …`);
  if (canPaste) say(`${listener ? "Or paste" : "Paste"} the address the browser ended on (Ctrl-C gives up):`);
  try {
    for (;;) {
      const answer = await firstAnswer(listener, canPaste ? io : undefined, ac.signal);
      if (!answer) throw new LoginAbandoned(ac.signal.aborted ? "no answer within 10 minutes" : "dismissed");
      try {
        return (await client.finishMcpLogin({ server, callback: answer.callback })).status;
      } catch (err) {
        // A mistyped paste is asked again; the browser's own answer, or a refusal, is the end.
        if (answer.from === "paste" && err instanceof RpcError && err.status === Status.INVALID_ARGUMENT) {
          writeText(io.err, io.style.yellow(`  ${err.message}\n`));
          continue;
        }
        throw err;
      }
    }
  } finally {
    clearTimeout(timer);
    ac.abort();
    listener?.server.close();
  }
}

function loginFrame(server: string, url: string, s: Style, width: number | undefined): string {
  const bar = s.cyan("│ ");
  const inner = width === undefined ? undefined : Math.max(10, width - 2);
  const page = pageOf(url);
  const lines = wrapWords(`Log Boxmaker in to MCP server "${server}"`, inner).map((l, i) =>
    i === 0 ? s.cyan(`┌ ${s.bold(l)}`) : bar + s.bold(l),
  );
  lines.push(`${bar}Open this page in your browser:`);
  for (const row of foldLine(page.href, inner)) lines.push(bar + s.bold(row));
  lines.push(bar + s.dim(`host: ${page.host}`));
  for (const l of wrapWords(
    "Boxmaker does not open it. The tokens it gives are kept by brokerd, never shown to the model.",
    inner,
  ))
    lines.push(bar + s.dim(l));
  lines.push(s.cyan("└"));
  return `${lines.join("\n")}\n`;
}

interface Listener {
  server: Server;
  /** The next visit to the redirect path, or undefined once `signal` aborts (the visit is then kept for the next call). */
  next: (signal: AbortSignal) => Promise<string | undefined>;
}

/** A listener on the redirect address, loopback only; each visit to its path is one answer. */
function listenForBrowser(redirectUri: string): Promise<Listener> {
  const u = new URL(redirectUri);
  if (u.protocol !== "http:" || !["127.0.0.1", "localhost", "[::1]"].includes(u.hostname))
    return Promise.reject(new Error("not a loopback address"));
  const waiting = new Set<(v: string) => void>();
  const arrived: string[] = [];
  const server = createServer((req, res) => {
    const got = new URL(req.url ?? "/", redirectUri);
    if (req.method !== "GET" || got.pathname !== u.pathname) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(BACK_PAGE);
    const [w] = waiting;
    if (w) {
      waiting.delete(w);
      w(got.href);
    } else arrived.push(got.href);
  });
  const next = (signal: AbortSignal) =>
    new Promise<string | undefined>((resolve) => {
      const ready = arrived.shift();
      if (ready !== undefined || signal.aborted) return resolve(ready);
      const w = (v: string) => resolve(v);
      waiting.add(w);
      signal.addEventListener("abort", () => waiting.delete(w) && resolve(undefined), { once: true });
    });
  const host = u.hostname === "[::1]" ? "::1" : u.hostname === "localhost" ? "127.0.0.1" : u.hostname;
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(Number(u.port || 80), host, () => resolve({ server, next }));
  });
}

/** The browser's visit or the person's paste, whichever comes first; undefined when dismissed (Ctrl-C, Ctrl-D) or out of time. */
async function firstAnswer(
  listener: Listener | undefined,
  paste: { input: NodeJS.ReadStream; err: NodeJS.WriteStream } | undefined,
  signal: AbortSignal,
): Promise<Answer | undefined> {
  const round = new AbortController();
  const stop = () => round.abort();
  signal.addEventListener("abort", stop, { once: true });
  const never = new Promise<never>(() => {});
  try {
    const browser = listener
      ? listener
          .next(round.signal)
          .then((v) => (v === undefined ? undefined : { from: "browser" as const, callback: v }))
      : never;
    const typed = paste
      ? readLine(paste.input, paste.err, "  › ", round.signal).then((v) =>
          v === undefined ? undefined : { from: "paste" as const, callback: v },
        )
      : never;
    const answer = await Promise.race([browser, typed]);
    // The browser answered while the paste line was open: end that line.
    if (answer?.from === "browser" && paste) writeText(paste.err, "\n");
    return answer;
  } finally {
    round.abort();
    signal.removeEventListener("abort", stop);
  }
}
