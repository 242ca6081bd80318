// The CLI against a loopd socket that accepts and then never answers, or answers with hostile error text.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createServer as createHttp2Server, type Http2Server, type ServerHttp2Stream } from "node:http2";
import { createServer as createNetServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { create, toBinary } from "@bufbuild/protobuf";
import { LoopService, serviceDefinition, LoopStatusResponseSchema } from "@boxmaker/common";
import { SessionInfoSchema } from "@boxmaker/common/client";
import { frame } from "../../../test/support/hostile-h2.js";
import { runCli } from "../../../test/support/stack.js";
import { tempDir } from "../../../test/support/tmp.js";
import { HOSTILE, obeyed, SHOWN } from "./support/terminal-bytes.js";

let tmp: ReturnType<typeof tempDir>;
let sock: string;
const closers: (() => Promise<unknown>)[] = [];
beforeEach(() => {
  tmp = tempDir("bx-silent-");
  sock = join(tmp.dir, "loopd.sock");
});
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  tmp.cleanup();
});

const cli = (args: string[]) => runCli(args, { env: { BOXMAKER_SOCKET: sock }, timeoutMs: 15_000 });

/** A bare HTTP/2 server on the socket: `answer` decides what each method gets (nothing, by default). */
async function http2Loopd(answer: (method: string, s: ServerHttp2Stream) => void = () => undefined) {
  const h2: Http2Server = createHttp2Server();
  h2.on("stream", (s, headers) => {
    s.resume();
    answer(String(headers[":path"]).split("/").pop()!, s);
  });
  await new Promise<void>((r) => h2.listen(sock, r));
  closers.push(() => new Promise((r) => h2.close(r)));
}

describe("a loopd that does not answer", () => {
  it("that never speaks HTTP/2: one line naming the socket, exit 6", async () => {
    const accepted: Socket[] = [];
    const mute: Server = createNetServer((c) => void accepted.push(c));
    await new Promise<void>((r) => mute.listen(sock, r));
    closers.push(async () => {
      for (const a of accepted) a.destroy();
      await new Promise((r) => mute.close(r));
    });
    const r = await cli(["--timeout", "1", "ls"]);
    expect(r.code).toBe(6);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `boxmaker: cannot reach ${sock}: it accepted the connection but sent no HTTP/2 settings within 1 s (UNAVAILABLE)\n`,
    );
  });

  it("that takes a call and never answers it: one line naming the call, exit 6", async () => {
    await http2Loopd();
    const r = await cli(["--timeout", "1", "ls"]);
    expect(r.code).toBe(6);
    expect(r.stderr).toBe(
      `boxmaker: ListSessions: deadline exceeded: ${sock} did not answer within 1 s (DEADLINE_EXCEEDED)\n`,
    );
  });

  it("that creates the session and never starts the turn's stream: run ends, exit 6", async () => {
    await http2Loopd((method, s) => {
      if (method !== "CreateSession") return;
      s.respond({ ":status": 200, "content-type": "application/grpc" }, { waitForTrailers: true });
      s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "0" }));
      s.end(frame(toBinary(SessionInfoSchema, create(SessionInfoSchema, { id: "s-1" }))));
    });
    const r = await cli(["--timeout", "1", "run", "hello"]);
    expect(r.code).toBe(6);
    expect(r.stderr).toBe(
      `session s-1\nboxmaker: Send: deadline exceeded: ${sock} did not answer within 1 s (DEADLINE_EXCEEDED)\n`,
    );
  });

  it("rejects a --timeout that is not a positive number", async () => {
    const r = await cli(["--timeout", "soon", "ls"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--timeout needs a positive number of seconds, not "soon"');
  });
});

/** A real grpc-js server on the socket serving loopd's service: each handler given here, the rest UNIMPLEMENTED. */
async function grpcLoopd(impl: grpc.UntypedServiceImplementation) {
  const server = new grpc.Server();
  server.addService(serviceDefinition(LoopService), impl);
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`unix:${sock}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  closers.push(async () => server.forceShutdown());
}

describe("a loopd (grpc-js) that accepts a call and never finishes it", () => {
  it("ListSessions taken and never answered: ls ends at its deadline, one line naming loopd's socket, exit 6", async () => {
    let taken = 0;
    await grpcLoopd({ listSessions: () => void taken++ });
    const r = await cli(["--timeout", "1", "ls"]);
    expect(taken).toBe(1);
    expect(r.code).toBe(6);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `boxmaker: ListSessions: deadline exceeded: ${sock} did not answer within 1 s (DEADLINE_EXCEEDED)\n`,
    );
  });

  it("Status answered only after a long delay: status ends at its deadline, exit 6, and the late answer is not printed", async () => {
    const late: NodeJS.Timeout[] = [];
    await grpcLoopd({
      status: (_call: unknown, cb: grpc.sendUnaryData<unknown>) =>
        void late.push(setTimeout(() => cb(null, create(LoopStatusResponseSchema, {})), 60_000)),
    });
    closers.push(async () => late.forEach(clearTimeout));
    const r = await cli(["--timeout", "1", "status"]);
    expect(late).toHaveLength(1);
    expect(r.code).toBe(6);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(
      `boxmaker: Status: deadline exceeded: ${sock} did not answer within 1 s (DEADLINE_EXCEEDED)\n`,
    );
  });

  it("a reply that trickles (headers, then a byte at a time of a message never whole): ls ends at its deadline, exit 6", async () => {
    const drips: NodeJS.Timeout[] = [];
    await http2Loopd((method, s) => {
      if (method !== "ListSessions") return;
      s.respond({ ":status": 200, "content-type": "application/grpc" });
      // A frame header announcing 1 MiB, then one byte every 50 ms: the message is never complete.
      const head = Buffer.from([0, 0, 0x10, 0, 0]);
      s.write(head);
      drips.push(setInterval(() => !s.destroyed && s.write(Buffer.from([0x0a])), 50));
    });
    closers.push(async () => drips.forEach(clearInterval));
    const r = await cli(["--timeout", "1", "ls"]);
    expect(r.code).toBe(6);
    expect(r.stderr).toBe(
      `boxmaker: ListSessions: deadline exceeded: ${sock} did not answer within 1 s (DEADLINE_EXCEEDED)\n`,
    );
  });
});

describe("a loopd whose error text holds terminal escapes", () => {
  it("the grpc-message is printed with its controls visible", async () => {
    const text = `boom ${HOSTILE.title}${HOSTILE.clear}${HOSTILE.clipboard}${HOSTILE.overwrite}${HOSTILE.bidi}`;
    await http2Loopd((_m, s) => {
      s.respond(
        {
          ":status": 200,
          "content-type": "application/grpc",
          "grpc-status": "13",
          // Percent-encoded as the gRPC spec has it: all but printable ASCII, and "%".
          "grpc-message": text.replace(/[^\x20-\x24\x26-\x7e]/gu, (ch) => encodeURIComponent(ch)),
        },
        { endStream: true },
      );
    });
    const r = await cli(["ls"]);
    expect(r.code).toBe(1);
    expect(obeyed(r.stderr)).toEqual([]);
    expect(r.stderr).toBe(
      `boxmaker: boom ${SHOWN.title}${SHOWN.clear}${SHOWN.clipboard}${SHOWN.overwrite}${SHOWN.bidi} (INTERNAL)\n`,
    );
  });
});
