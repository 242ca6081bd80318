// CompleteChannel served by inferproxy's own completeChannel (the built one),
// over completions whose producer has more work in hand after its first event:
// it holds the event loop (as parsing the rest of a burst does) before the
// second. Its own process, so the client's clock and event loop are not the
// ones held. Each event carries the monotonic time (ns) at which it was made.
import * as grpc from "@grpc/grpc-js";
import { InferService, addService, prepareSocketPath } from "@boxmaker/common";
import { completeChannel } from "../../dist/completion/complete-channel.js";

const [sock, holdMs] = [process.argv[2], Number(process.argv[3])];
async function* busyCompletion() {
  yield { event: { case: "content", value: { text: `first ${process.hrtime.bigint()}` } } };
  const until = performance.now() + holdMs;
  while (performance.now() < until) {
    // held: nothing else in this process runs
  }
  yield { event: { case: "content", value: { text: `second ${process.hrtime.bigint()}` } } };
}
const server = new grpc.Server();
addService(server, InferService, {
  status: async () => ({}),
  slotAction: async () => ({}),
  slotFiles: async () => ({}),
  countTokens: async () => ({}),
  complete: busyCompletion,
  completeChannel: (requests, ctx) => completeChannel(requests, ctx, busyCompletion),
});
await prepareSocketPath(sock);
server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  process.send?.("ready");
});
