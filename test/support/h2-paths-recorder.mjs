// Preloaded into a CLI under test (NODE_OPTIONS=--import …): appends the
// :path of every HTTP/2 request the process makes to $BX_H2_PATHS_FILE, so a
// test can see which calls the CLI made (a Follow it opened by itself) without
// the CLI printing anything. Test-only.
import { appendFileSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";

const file = process.env.BX_H2_PATHS_FILE;
if (file) {
  const http2 = createRequire(import.meta.url)("node:http2");
  const connect = http2.connect;
  http2.connect = function (...args) {
    const session = connect.apply(this, args);
    const request = session.request;
    session.request = function (headers, ...rest) {
      appendFileSync(file, `${headers[":path"]}\n`);
      return request.call(this, headers, ...rest);
    };
    return session;
  };
  // The CLI imports `connect` by name: its binding follows the patched export.
  syncBuiltinESMExports();
}
