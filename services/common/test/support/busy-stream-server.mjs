// A Complete stream whose producer has more work in hand after its first
// event: it holds the event loop (as an fsync or a burst of parsing does)
// before the second. Runs in its own process so the client's clock and event
// loop are not the ones held. Each event carries the monotonic time (ns) at
// which it was made; the second also says when the held work ended.
import * as grpc from "@grpc/grpc-js";
import { InferService, addService, prepareSocketPath } from "@boxmaker/common";

const [sock, holdMs] = [process.argv[2], Number(process.argv[3])];
const server = new grpc.Server();
addService(server, InferService, {
  status: async () => ({}),
  slotAction: async () => ({}),
  slotFiles: async () => ({}),
  countTokens: async () => ({}),
  completeChannel: async function* () {},
  complete: async function* () {
    yield { event: { case: "content", value: { text: `first ${process.hrtime.bigint()}` } } };
    const until = performance.now() + holdMs;
    while (performance.now() < until) {
      // held: nothing else in this process runs
    }
    yield { event: { case: "content", value: { text: `second ${process.hrtime.bigint()}` } } };
  },
});
await prepareSocketPath(sock);
server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  process.send?.("ready");
});
