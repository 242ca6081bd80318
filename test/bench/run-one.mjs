// One bench in a process of its own, started by run.mjs as the leader of its
// own process group: a bench past its time limit is then killed together with
// every daemon, simulator and llama-server it started, and the run goes on.
// Talks to run.mjs over the IPC channel only, because a bench's children may
// write to stdout (the wire floor's hops inherit it).
//   node run-one.mjs <bench file> [--soak]
import { pathToFileURL } from "node:url";

const [file, ...flags] = process.argv.slice(2);
const soak = flags.includes("--soak");
const send = (msg) => new Promise((resolve) => process.send(msg, resolve));

const load = async (f) => {
  const url = pathToFileURL(f).href;
  if (!f.endsWith(".ts")) return import(url);
  // TypeScript benches load through tsx so they can share test/support.
  const { tsImport } = await import("tsx/esm/api");
  return tsImport(url, import.meta.url);
};

let exitCode = 0;
try {
  const mod = await load(file);
  // The limit comes first: a bench that hangs at once is still killed at its own limit, not the default.
  const limit = soak ? (mod.soakTimeLimitS ?? mod.timeLimitS) : mod.timeLimitS;
  if (limit !== undefined) await send({ t: "limit", s: limit });
  const pending = [];
  const emit = (metric, value, unit) => {
    pending.push(send({ t: "metric", metric, value: Number(value.toFixed ? value.toFixed(4) : value), unit }));
  };
  let skipped;
  const skip = (reason) => {
    skipped = reason;
  };
  await mod.default(emit, { soak, skip });
  await Promise.all(pending);
  await send(skipped === undefined ? { t: "done" } : { t: "skipped", reason: skipped });
} catch (err) {
  exitCode = 1;
  await send({ t: "error", message: String(err?.stack ?? err) });
}
// Explicitly: a bench may leave a pool or timer behind, and the run must not wait for it.
process.exit(exitCode);
