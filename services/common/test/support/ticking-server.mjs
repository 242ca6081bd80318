// InferService in its own process, so a test can kill it mid-call as a crash
// would: Status answers with the name it was started with; Complete sends an
// event every 10 ms until the client leaves.
import * as grpc from "@grpc/grpc-js";
import { InferService, addService, prepareSocketPath } from "@boxmaker/common";

const [sock, name] = [process.argv[2], process.argv[3]];
const server = new grpc.Server();
addService(server, InferService, {
  status: async () => ({ serverState: name }),
  slotAction: async () => ({}),
  slotFiles: async () => ({}),
  countTokens: async () => ({}),
  completeChannel: async function* () {},
  complete: async function* (_req, ctx) {
    for (let i = 0; !ctx.signal.aborted; i++) {
      yield { event: { case: "content", value: { text: String(i) } } };
      await new Promise((r) => setTimeout(r, 10));
    }
  },
});
await prepareSocketPath(sock);
server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  process.send?.("ready");
});
