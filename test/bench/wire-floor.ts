// The wire floor: the stack's shape with none of its work. Two bare grpc-js
// hops in their own processes (the daemons' node flags), an fsync on the
// first, undici to the server on the second, bytes relayed unparsed. Time to
// first content through it, against the stack's, splits the stack's added
// time into what the shape costs on this machine (process wake-ups, two
// gRPC call set-ups, two relayed messages back, one fsync) and what the
// daemons' own work costs on top.
import { fork, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { DAEMON_NODE_FLAGS } from "@boxmaker/common";

const HOP = join(import.meta.dirname, "wire-floor-hop.mjs");
const bytes = (b: Buffer) => b;

export class WireFloor {
  private readonly procs: ChildProcess[] = [];
  private client: grpc.Client | undefined;

  constructor(
    private readonly dir: string,
    private readonly llamaSocket: string,
  ) {}

  async start(): Promise<this> {
    const a = join(this.dir, "floor-a.sock");
    const b = join(this.dir, "floor-b.sock");
    await this.hop(["B", b, this.llamaSocket]);
    await this.hop(["A", a, b, join(this.dir, "floor.log")]);
    this.client = new grpc.Client(`unix://${a}`, grpc.credentials.createInsecure(), {
      "grpc.enable_channelz": 0,
      "grpc.enable_retries": 0,
    });
    return this;
  }

  private async hop(args: string[]): Promise<void> {
    const p = fork(HOP, args, { execArgv: [...DAEMON_NODE_FLAGS], stdio: "inherit" });
    this.procs.push(p);
    await once(p, "message");
  }

  /** Sends `body` through both hops; resolves with the times (ms, from the send) of the first content and the end. */
  async request(body: string, now: () => number): Promise<{ first: number; end: number }> {
    const t0 = now();
    let first = 0;
    const call = this.client!.makeServerStreamRequest(
      "/floor/Relay",
      bytes,
      bytes,
      Buffer.from(body),
      new grpc.Metadata(),
      {},
    );
    let text = "";
    for await (const chunk of call as AsyncIterable<Buffer>) {
      const s = chunk.toString();
      if (!first && /"content":"[^"]/.test(s)) first = now();
      text += s;
    }
    if (!text.includes("[DONE]")) throw new Error("the floor request did not finish");
    return { first: first - t0, end: now() - t0 };
  }

  stop(): void {
    this.client?.close();
    for (const p of this.procs) p.kill();
  }
}
