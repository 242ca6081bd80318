import { createRequire } from "node:module";
import type { Dispatcher, Pool as UndiciPool, buildConnector as undiciBuildConnector } from "undici";

// undici's index loads all of undici (fetch, WebSocket, caches, mocks), and its cookie
// module reads the global `Headers`, which loads Node's own bundled copy of undici as
// well: megabytes of an idle inferproxy's heap for what it never uses (docs/benchmarks.md,
// "Figures behind the code"). inferproxy needs a
// Pool, a connector and `request`, so it loads those three files alone. They are
// undici's own files (its package has no exports map to close them); the version is
// pinned in package-lock.json, and undici-pool.test.ts checks they are what the index
// exports.
const load = createRequire(import.meta.url);

export const Pool: typeof UndiciPool = load("undici/lib/dispatcher/pool.js");
export type Pool = UndiciPool;
export const buildConnector: typeof undiciBuildConnector = load("undici/lib/core/connect.js");

// The index adds `request` to every dispatcher's prototype; without the index it is
// called with the pool as `this`, exactly as the method would be.
const apiRequest: (this: Dispatcher, opts: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData> = load(
  "undici/lib/api/api-request.js",
);

/** `pool.request(opts)`, as undici's index defines it. */
export function request(pool: Pool, opts: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
  return apiRequest.call(pool, opts);
}
