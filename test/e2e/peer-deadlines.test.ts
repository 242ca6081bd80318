// loopd's calls to its peers end: a brokerd that takes a call and never answers
// it (a real grpc-js server serving BrokerService on brokerd's socket, in place of
// the real one) fails that call at loopd's deadline, naming brokerd's socket,
// while the CLI's own deadline is far longer.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rmSync } from "node:fs";
import { BrokerService, InferService, serviceDefinition } from "@boxmaker/common";
import { peerDeadlines } from "../../services/loopd/src/peer-deadlines.js";
import { useStack } from "../support/use-stack.js";

const fx = useStack("bx-peer-deadline-", { loopd: { peer_call_timeout_ms: 1000 } });
let fake: grpc.Server;
let taken = 0;

beforeAll(async () => {
  await fx.stack.kill("brokerd");
  rmSync(fx.stack.sockets.brokerd, { force: true });
  fake = new grpc.Server();
  // Takes ListProposals and ListChanges and never answers; the rest UNIMPLEMENTED.
  fake.addService(serviceDefinition(BrokerService), {
    listProposals: () => void taken++,
    listHooks: () => void taken++,
  });
  await new Promise<void>((resolve, reject) =>
    fake.bindAsync(`unix:${fx.stack.sockets.brokerd}`, grpc.ServerCredentials.createInsecure(), (err) =>
      err ? reject(err) : resolve(),
    ),
  );
});
afterAll(() => fake?.forceShutdown());

describe("a brokerd that accepts a call and never finishes it", () => {
  for (const [args, method] of [
    [["proposals"], "ListProposals"],
    [["hooks"], "ListHooks"],
  ] as const) {
    it(`boxmaker ${args.join(" ")}: loopd's ${method} ends at loopd's deadline, naming brokerd's socket`, async () => {
      const before = taken;
      const r = await fx.stack.cli(["--timeout", "60", ...args], { timeoutMs: 50_000 });
      expect(taken).toBe(before + 1);
      expect(r.code).not.toBe(0);
      expect(r.stdout).toBe("");
      // loopd's 1 s, not the CLI's 60 s: the call to brokerd was what ended.
      expect(r.stderr).toContain(
        `${method}: deadline exceeded: ${fx.stack.sockets.brokerd} did not answer within 1 s (DEADLINE_EXCEEDED)`,
      );
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
    });
  }
});

describe("every unary call loopd makes to a peer has a deadline", () => {
  it("brokerd's and inferproxy's unary methods all resolve to a positive deadline", () => {
    const d = peerDeadlines(60_000);
    for (const [svc, opts] of [
      [BrokerService, d.brokerd],
      [InferService, d.inferproxy],
    ] as const) {
      const methods = opts.methods as Record<string, { timeoutMs?: number }>;
      for (const m of svc.methods.filter((x) => x.methodKind === "unary")) {
        const ms = methods[m.localName]?.timeoutMs ?? opts.unaryTimeoutMs;
        expect(ms, `${svc.typeName}.${m.name}`).toBeGreaterThan(0);
      }
    }
  });
});
