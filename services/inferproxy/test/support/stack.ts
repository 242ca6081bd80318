import * as grpc from "@grpc/grpc-js";
import { join } from "node:path";
import {
  InferService,
  type RpcError,
  addService,
  createClient,
  createLogger,
  parseConfig,
  prepareSocketPath,
  type ClientOf,
  type CompletionEvent,
} from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CompleteRequestSchema } from "@boxmaker/common";
import { startLlamaSim, type LlamaSim, type LlamaSimOptions } from "@boxmaker/llama-sim";
import { configSchema, type InferproxyConfig } from "../../src/config.js";
import { InferProxy } from "../../src/service.js";
import { tempDir } from "../../../../test/support/tmp.js";

export interface RunningProxy {
  proxy: InferProxy;
  client: ClientOf<typeof InferService>;
  config: InferproxyConfig;
  socket: string;
  close(): Promise<void>;
}

/** inferproxy in-process behind a real gRPC server on a real Unix socket. */
export async function startProxy(dir: string, config: Record<string, unknown>): Promise<RunningProxy> {
  const socket = join(dir, "inferproxy.sock");
  const cfg = parseConfig(configSchema, { socket, health_poll_ms: 100, log_level: "silent", ...config });
  const proxy = new InferProxy({ config: cfg, log: createLogger("inferproxy-test", cfg.log_level) });
  await proxy.start();
  const server = new grpc.Server();
  addService(server, InferService, proxy.impl());
  await prepareSocketPath(socket);
  await new Promise<void>((res, rej) =>
    server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
  );
  const client = createClient(InferService, socket);
  return {
    proxy,
    client,
    config: cfg,
    socket,
    close: async () => {
      client.close();
      server.forceShutdown();
      await proxy.close();
    },
  };
}

export interface Stack extends RunningProxy {
  sim: LlamaSim;
  dir: string;
  llamaSocket: string;
}

/** The simulator on a Unix socket and inferproxy in front of it, with a contract that matches. */
export async function startStack(
  opts: { sim?: LlamaSimOptions; config?: Record<string, unknown> } = {},
): Promise<Stack> {
  const tmp = tempDir("bxip-");
  const llamaSocket = join(tmp.dir, "llama.sock");
  const sim = await startLlamaSim({ socketPath: llamaSocket, ...opts.sim });
  const p = await startProxy(tmp.dir, {
    upstream: { socket_path: llamaSocket },
    contract: sim.contract,
    ...opts.config,
  });
  return {
    ...p,
    sim,
    dir: tmp.dir,
    llamaSocket,
    close: async () => {
      await p.close();
      await sim.close();
      tmp.cleanup();
    },
  };
}

export type CompleteInit = MessageInitShape<typeof CompleteRequestSchema>;

export const userMessages = (text = "hello") =>
  JSON.stringify([
    { role: "system", content: "You are Boxmaker." },
    { role: "user", content: text },
  ]);

export interface Collected {
  events: CompletionEvent[];
  error: RpcError | undefined;
  cases: string[];
  final: Extract<CompletionEvent["event"], { case: "final" }>["value"] | undefined;
  partial: Extract<CompletionEvent["event"], { case: "partial" }>["value"] | undefined;
}

export async function collect(
  client: ClientOf<typeof InferService>,
  req: CompleteInit,
  signal?: AbortSignal,
): Promise<Collected> {
  const events: CompletionEvent[] = [];
  let error: RpcError | undefined;
  try {
    for await (const ev of client.complete(req, signal ? { signal } : undefined)) events.push(ev);
  } catch (e) {
    error = e as RpcError;
  }
  const pick = <C extends string>(c: C) => events.find((e) => e.event.case === c)?.event.value as never;
  return {
    events,
    error,
    cases: events.map((e) => e.event.case ?? ""),
    final: pick("final"),
    partial: pick("partial"),
  };
}

export function text(events: CompletionEvent[], kind: "content" | "reasoning"): string {
  return events.map((e) => (e.event.case === kind ? e.event.value.text : "")).join("");
}
