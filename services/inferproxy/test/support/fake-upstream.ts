import http, { type IncomingMessage, type ServerResponse } from "node:http";
import { rm } from "node:fs/promises";
import { recording, type Recording } from "./recordings.js";

export interface FakeRequest {
  method: string;
  path: string;
  body: string;
}

export type Route = (req: FakeRequest, res: ServerResponse) => void | Promise<void>;

/**
 * A tiny stand-in for llama-server that answers with recorded bytes, for
 * replaying recordings verbatim and for answers the simulator does not give.
 */
export class FakeUpstream {
  readonly requests: FakeRequest[] = [];
  private readonly routes = new Map<string, Route[]>();
  private readonly server: http.Server;

  constructor(readonly socketPath: string) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    const props = recording("props");
    this.always("GET /health", (_q, res) => send(res, recording("health")));
    this.always("GET /props", (_q, res) => send(res, props));
    this.always("GET /slots", (_q, res) => send(res, recording("slots-idle")));
  }

  async start(): Promise<this> {
    await rm(this.socketPath, { force: true });
    await new Promise<void>((r) => this.server.listen(this.socketPath, r));
    return this;
  }

  /** Answers every request to `key` ("METHOD /path") this way. */
  always(key: string, route: Route): void {
    this.routes.set(key, [route]);
  }

  /** Answers the next request to `key` this way (FIFO), then falls back to the previous routes. */
  once(key: string, route: Route): void {
    const list = this.routes.get(key) ?? [];
    this.routes.set(key, [route, ...list]);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
    await rm(this.socketPath, { force: true });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const parts: Buffer[] = [];
    for await (const b of req) parts.push(b as Buffer);
    const q = { method: req.method ?? "GET", path: req.url ?? "/", body: Buffer.concat(parts).toString("utf8") };
    this.requests.push(q);
    const key = `${q.method} ${q.path}`;
    const list = this.routes.get(key);
    const route = list && list.length > 1 ? list.shift()! : list?.[0];
    if (!route) {
      res.writeHead(404, { "content-type": "application/json" });
      res.end('{"error":{"code":404,"message":"File Not Found","type":"not_found_error"}}');
      return;
    }
    await route(q, res);
  }
}

/** Sends a recorded response verbatim; SSE bodies event by event, so the client sees a real stream. */
export async function send(res: ServerResponse, r: Recording, gapMs = 0): Promise<void> {
  res.writeHead(r.response.status, { "content-type": r.response.content_type });
  if (!r.response.content_type.includes("event-stream")) {
    res.end(r.response.body);
    return;
  }
  const events = r.response.body.split(/(?<=\n\n)/);
  for (const e of events) {
    if (res.destroyed) return;
    res.write(e);
    await new Promise((t) => (gapMs > 0 ? setTimeout(t, gapMs) : setImmediate(t)));
  }
  res.end();
}
