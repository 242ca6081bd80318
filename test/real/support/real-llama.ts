// The real-server tier's llama-server: the binary and tiny models that
// scripts/llama-server/build.sh leaves in its cache outside the checkout, and a
// process wrapper that runs one on a Unix socket the way Boxmaker's dedicated
// server runs (--jinja, 3 slots, --slot-save-path).
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { Agent, request } from "undici";
import { InferService, LoopService, createClient } from "@boxmaker/common";
import { requires } from "../../support/requirements.js";
import { Stack, type StackOptions } from "../../support/stack.js";

export const LLAMA_VERSION = process.env.NODE_LLAMA_CPP_VERSION ?? "3.21.1";

export interface RealLlamaBuild {
  server: string;
  models: { answer: string; tool: string; think: string };
}

/** The build from scripts/llama-server/build.sh, if it is there. */
export function findRealLlama(): RealLlamaBuild | undefined {
  const dir = join(process.env.BOXMAKER_LLAMA_CACHE ?? join(homedir(), ".cache", "boxmaker-llama"), LLAMA_VERSION);
  const build: RealLlamaBuild = {
    server: join(dir, "src", "build", "bin", "llama-server"),
    models: {
      answer: join(dir, "tiny-answer.gguf"),
      tool: join(dir, "tiny-tool.gguf"),
      think: join(dir, "tiny-think.gguf"),
    },
  };
  const all = [build.server, ...Object.values(build.models)];
  return all.every((f) => existsSync(f)) ? build : undefined;
}

export const realBuild = findRealLlama();

/**
 * For `describe.skipIf(!haveRealLlama(...))`: fails under CI; locally the whole
 * tier skips as one line in the run's summary, whatever each file tests.
 */
export function haveRealLlama(_what: string): boolean {
  return requires("the real-server tier (test/real)", ["llama-server"], () => realBuild !== undefined);
}

export type ModelName = keyof RealLlamaBuild["models"];

export interface RealLlamaOptions {
  model: ModelName;
  /** A model file other than the named ones (the template families of support/template-models.ts). */
  modelPath?: string;
  /** Unix socket path; llama-server listens on a socket when --host ends in .sock. */
  socketPath: string;
  slotSavePath?: string;
  parallel?: number;
  ctxSize?: number;
  extraArgs?: string[];
}

/** One real llama-server process. */
export class RealLlama {
  proc?: ChildProcess;
  readonly log: string[] = [];
  private dispatcher: Agent;

  constructor(readonly opts: RealLlamaOptions) {
    this.dispatcher = new Agent({ connect: { socketPath: opts.socketPath } });
  }

  get socketPath(): string {
    return this.opts.socketPath;
  }

  /** Starts the server (clearing a stale socket, as the dedicated unit does) and waits until /health is 200. */
  async start(model: ModelName = this.opts.model): Promise<this> {
    if (!realBuild) throw new Error("no real llama-server built: npm run llama-server:build");
    rmSync(this.opts.socketPath, { force: true });
    if (this.opts.slotSavePath) mkdirSync(this.opts.slotSavePath, { recursive: true });
    const args = [
      "-m",
      this.opts.modelPath ?? realBuild.models[model],
      "--host",
      this.opts.socketPath,
      "--jinja",
      "--parallel",
      String(this.opts.parallel ?? 3),
      "--ctx-size",
      String(this.opts.ctxSize ?? 98304),
      "--no-mmap",
      "-t",
      "2",
      "--no-webui",
      ...(this.opts.slotSavePath ? ["--slot-save-path", this.opts.slotSavePath] : []),
      ...(this.opts.extraArgs ?? []),
    ];
    const proc = spawn(realBuild.server, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    const keep = (b: Buffer) => {
      this.log.push(b.toString());
      if (this.log.length > 2000) this.log.splice(0, 1000);
    };
    proc.stdout!.on("data", keep);
    proc.stderr!.on("data", keep);
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (proc.exitCode !== null)
        throw new Error(`llama-server exited ${proc.exitCode}: ${this.log.join("").slice(-2000)}`);
      if (Date.now() > deadline)
        throw new Error(`llama-server not healthy after 60 s: ${this.log.join("").slice(-2000)}`);
      if (existsSync(this.opts.socketPath) && (await this.get("/health").catch(() => undefined))?.status === 200)
        return this;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Stops the server; like the real one, the socket file is left behind. */
  async stop(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode) return;
    const exited = once(p, "exit");
    p.kill(signal);
    const timer = setTimeout(() => p.kill("SIGKILL"), 10_000);
    await exited;
    clearTimeout(timer);
  }

  async close(): Promise<void> {
    await this.stop();
    await this.dispatcher.close();
  }

  async get(path: string): Promise<{ status: number; body: any }> {
    const r = await request(`http://localhost${path}`, {
      dispatcher: this.dispatcher,
      headersTimeout: 10_000,
      bodyTimeout: 30_000,
    });
    const text = await r.body.text();
    return { status: r.statusCode, body: text ? JSON.parse(text) : undefined };
  }

  async post(path: string, body: unknown): Promise<{ status: number; body: any }> {
    const r = await request(`http://localhost${path}`, {
      method: "POST",
      dispatcher: this.dispatcher,
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
    });
    const text = await r.body.text();
    return { status: r.statusCode, body: text ? JSON.parse(text) : undefined };
  }
}

/** What inferproxy's `contract` config must say to accept this server, read from its /props. */
export async function contractOf(
  llama: RealLlama,
): Promise<{ template_sha256: string; n_ctx_per_slot: number; total_slots: number }> {
  const { body } = await llama.get("/props");
  return {
    template_sha256: createHash("sha256")
      .update(body.chat_template as string, "utf8")
      .digest("hex"),
    n_ctx_per_slot: body.default_generation_settings.n_ctx as number,
    total_slots: body.total_slots as number,
  };
}

/**
 * The three daemons against a running real server, in `dir`, returned once
 * inferproxy's self-test against that server has passed and loopd answers
 * (Stack.start waits only for the sockets to exist; on a loaded machine a
 * first call right after can meet a connection that is not ready yet).
 */
export async function startStackOn(
  llama: RealLlama,
  dir: string,
  opts: Omit<StackOptions, "upstream"> = {},
): Promise<Stack> {
  const stack = await new Stack(dir, {
    ...opts,
    upstream: { socketPath: llama.socketPath, contract: await contractOf(llama) },
  }).start();
  await inferproxyReady(stack.sockets.inferproxy);
  const loopd = createClient(LoopService, stack.sockets.loopd);
  try {
    await loopd.listSessions({}, { waitForReady: true, timeoutMs: 30_000 });
  } finally {
    loopd.close();
  }
  return stack;
}

/** Waits until inferproxy's start-up self-test against the real server has passed. */
export async function inferproxyReady(socket: string, timeoutMs = 60_000): Promise<void> {
  const client = createClient(InferService, socket);
  const deadline = Date.now() + timeoutMs;
  let last = "";
  try {
    for (;;) {
      try {
        const s = await client.status({}, { timeoutMs: 2000 });
        if (s.selfTest?.passed) return;
        last = s.selfTest?.ran ? `self-test failed: ${s.selfTest.mismatches.join("; ")}` : `server ${s.serverState}`;
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`inferproxy not ready: ${last}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    client.close();
  }
}
