// inferproxy's added latency: the same streamed completion straight to the
// simulator and through inferproxy (a child process, real Unix sockets), in
// one run. Needs the built code (npm run build).
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Pool } from "undici";
import { InferService, createClient } from "../../services/common/dist/index.js";
import { startLlamaSim } from "../../test/llama-sim/dist/index.js";
import { nowMs, p50, p99 } from "./stats.mjs";

export const timeLimitS = 90;

const repo = join(dirname(fileURLToPath(import.meta.url)), "../..");
const TTFT_RUNS = 300;
const LONG_TOKENS = 2000;
const LONG_RUNS = 5;

const messages = JSON.stringify([
  { role: "system", content: "You are Boxmaker." },
  { role: "user", content: "benchmark" },
]);

/** utime+stime of a process in ms (Linux /proc). */
function cpuMsOf(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/**
 * A child process serving InferService.Complete with a single immediate event.
 * Every other method of the service is answered UNIMPLEMENTED, derived from the
 * service's own descriptor: addService refuses a service with a method left
 * out, and a hand-written list went stale each time the proto gained one
 * (CompleteChannel), which crashed the child and left the bench waiting.
 */
async function bareHop(dir) {
  const sock = join(dir, "hop.sock");
  const code = `
    import * as grpc from "@grpc/grpc-js";
    import { addService, InferService, RpcError, Status } from ${JSON.stringify(join(repo, "services/common/dist/index.js"))};
    const refusal = (m) => new RpcError(Status.UNIMPLEMENTED, m.name + " is not served by the bare hop");
    const impl = Object.fromEntries(InferService.methods.map((m) => [
      m.localName,
      m.methodKind === "unary" ? async () => { throw refusal(m); } : async function* () { throw refusal(m); },
    ]));
    impl.complete = async function* () { yield { event: { case: "content", value: { text: "x" } } }; };
    const server = new grpc.Server();
    addService(server, InferService, impl);
    server.bindAsync("unix://${sock}", grpc.ServerCredentials.createInsecure(), () => console.log("up"));
    process.on("SIGTERM", () => server.forceShutdown());`;
  const proc = spawn(process.execPath, ["--input-type=module", "-e", code], {
    cwd: repo,
    stdio: ["ignore", "pipe", "inherit"],
  });
  // Up, or an error naming why not: a child that dies before listening must not leave the bench waiting.
  await Promise.race([
    once(proc.stdout, "data"),
    once(proc, "exit").then(([code, signal]) => {
      throw new Error(`the bare hop exited (${signal ?? code}) before listening`);
    }),
  ]);
  const client = createClient(InferService, sock);
  return {
    client,
    close: async () => {
      client.close();
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill("SIGTERM");
      await once(proc, "exit");
    },
  };
}

export default async function (emit) {
  const dir = mkdtempSync(join(tmpdir(), "bxb-"));
  const llamaSock = join(dir, "llama.sock");
  const proxySock = join(dir, "ip.sock");
  const sim = await startLlamaSim({ socketPath: llamaSock });
  const cfg = join(dir, "ip.json");
  writeFileSync(
    cfg,
    JSON.stringify({
      socket: proxySock,
      upstream: { socket_path: llamaSock },
      contract: sim.contract,
      // Not the production slot directory: a stack installed on this machine holds its lock.
      slot_files: { dir: "" },
      log_level: "warn",
    }),
  );
  const child = spawn(process.execPath, [join(repo, "services/inferproxy/dist/main.js"), "--config", cfg], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const client = createClient(InferService, proxySock);
  const pool = new Pool("http://localhost", { socketPath: llamaSock });
  try {
    await client.waitForReady(10_000);
    for (;;) {
      const st = await client.status({});
      if (st.selfTest?.passed) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const body = (slot) =>
      `{"id_slot":${slot},"cache_prompt":true,"stream":true,"return_progress":true,"max_tokens":4096,"temperature":0.6,"top_p":0.95,"top_k":20,"min_p":0,"messages":${messages}}`;

    // Direct: undici to the simulator, time to the first content delta and to the end.
    async function direct(turn) {
      sim.enqueue(turn, 0);
      const t0 = nowMs();
      let first = NaN;
      const res = await pool.request({
        path: "/v1/chat/completions",
        method: "POST",
        body: body(0),
        headers: { "content-type": "application/json" },
      });
      for await (const chunk of res.body) {
        if (Number.isNaN(first) && chunk.includes('"content":"')) first = nowMs() - t0;
      }
      return { ttft: first, total: nowMs() - t0 };
    }
    async function proxied(turn) {
      sim.enqueue(turn, 0);
      const t0 = nowMs();
      let first = NaN;
      for await (const ev of client.complete({ slot: 0, messagesJson: messages })) {
        if (Number.isNaN(first) && ev.event.case === "content") first = nowMs() - t0;
      }
      return { ttft: first, total: nowMs() - t0 };
    }

    const short = { content: Array.from({ length: 8 }, (_, i) => `w${i} `) };
    for (let i = 0; i < 30; i++) {
      await direct(short);
      await proxied(short);
    }
    const d = [];
    const p = [];
    for (let i = 0; i < TTFT_RUNS; i++) {
      // Alternate so drift affects both paths alike.
      d.push((await direct(short)).ttft);
      p.push((await proxied(short)).ttft);
    }
    emit("ttft_direct_ms_p50", p50(d), "ms");
    emit("ttft_proxied_ms_p50", p50(p), "ms");
    emit("ttft_added_ms_p50", p50(p) - p50(d), "ms");
    emit("ttft_added_ms_p99", p99(p) - p99(d), "ms");
    emit("ttft_ratio_p50", p50(p) / p50(d), "x");

    // What one bare gRPC hop to another process costs by itself, for scale:
    // a child that answers Complete with one content event at once.
    const hop = await bareHop(dir);
    try {
      const h = [];
      for (let i = 0; i < 30 + TTFT_RUNS; i++) {
        const t0 = nowMs();
        for await (const ev of hop.client.complete({ slot: 0 })) if (ev.event.case === "content") break;
        if (i >= 30) h.push(nowMs() - t0);
      }
      emit("grpc_hop_first_message_ms_p50", p50(h), "ms");
      emit("ttft_added_beyond_hop_ms_p50", p50(p) - p50(d) - p50(h), "ms");
    } finally {
      await hop.close();
    }

    const long = { content: Array.from({ length: LONG_TOKENS }, (_, i) => `t${i} `) };
    const dl = [];
    const pl = [];
    let cpu = 0;
    for (let i = 0; i < LONG_RUNS; i++) {
      dl.push((await direct(long)).total);
      const c0 = cpuMsOf(child.pid);
      pl.push((await proxied(long)).total);
      cpu += cpuMsOf(child.pid) - c0;
    }
    emit("per_token_direct_us", (p50(dl) * 1000) / LONG_TOKENS, "us");
    emit("per_token_added_us", ((p50(pl) - p50(dl)) * 1000) / LONG_TOKENS, "us");
    emit("stream_ratio", p50(pl) / p50(dl), "x");
    emit("cpu_ms_per_1k_tokens", (cpu / (LONG_RUNS * LONG_TOKENS)) * 1000, "ms");
  } finally {
    client.close();
    await pool.destroy();
    child.kill("SIGTERM");
    await once(child, "exit");
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
