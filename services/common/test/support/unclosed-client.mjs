// Makes one call with the client, as the CLI makes it, and never closes it: the process
// must still end on its own, as a CLI command that returns early would.
import { InferService } from "@boxmaker/common";
import { createClient } from "@boxmaker/common/client";

const c = createClient(InferService, process.argv[2], {
  unaryTimeoutMs: 30_000,
  headersTimeoutMs: 30_000,
  connectTimeoutMs: 10_000,
});
const st = await c.status({});
process.stdout.write(`${st.serverState}\n`);
