// Makes one call with the node:http2 client and never closes it: the process
// must still end on its own, as a CLI command that returns early would.
import { InferService } from "@boxmaker/common";
import { createHttp2Client } from "@boxmaker/common/client";

const c = createHttp2Client(InferService, process.argv[2]);
const st = await c.status({});
process.stdout.write(`${st.serverState}\n`);
