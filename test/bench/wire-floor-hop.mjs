// One hop of the wire floor (see wire-floor.ts): what the stack's shape costs
// with none of its work. Bare grpc-js, bytes in and bytes out, no protobuf.
//   A <socket> <next socket> <log file>   the loopd hop: one O_APPEND write and
//                                         fsync, then a call to B; relays its messages
//   B <socket> <llama socket>             the inferproxy hop: POSTs the request body
//                                         with undici, relays each upstream read
import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { Pool } from "undici";

const [role, socket, next, extra] = process.argv.slice(2);
const bytes = (b) => b;
const method = (path) => ({
  path,
  requestStream: false,
  responseStream: true,
  requestSerialize: bytes,
  requestDeserialize: bytes,
  responseSerialize: bytes,
  responseDeserialize: bytes,
});
const opts = { "grpc.enable_channelz": 0, "grpc.enable_retries": 0, "grpc.max_receive_message_length": 64 << 20 };
const server = new grpc.Server(opts);

if (role === "A") {
  const log = openSync(extra, "a");
  const down = new grpc.Client(`unix://${next}`, grpc.credentials.createInsecure(), opts);
  server.addService(
    { relay: method("/floor/Relay") },
    {
      relay: (call) => {
        writeSync(log, `${call.request.length}\n`);
        fsyncSync(log);
        const up = down.makeServerStreamRequest("/floor/Relay", bytes, bytes, call.request, new grpc.Metadata(), {});
        up.on("data", (m) => call.write(m));
        up.on("end", () => call.end());
        up.on("error", (e) => call.destroy(e));
      },
    },
  );
  process.on("exit", () => closeSync(log));
} else {
  const pool = new Pool("http://localhost", { socketPath: next });
  server.addService(
    { relay: method("/floor/Relay") },
    {
      relay: async (call) => {
        const res = await pool.request({
          path: "/v1/chat/completions",
          method: "POST",
          headers: { "content-type": "application/json" },
          body: call.request,
        });
        for await (const chunk of res.body) call.write(chunk);
        call.end();
      },
    },
  );
}
server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) => {
  if (err) throw err;
  process.send?.("ready");
});
