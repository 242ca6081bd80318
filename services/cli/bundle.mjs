#!/usr/bin/env node
// Bundles the built CLI (dist/main.js) into dist/bundle/: one module graph
// instead of hundreds of files saves ~50 ms on every `boxmaker` start, which a
// person feels. Lazy imports stay lazy (code splitting), so `--help` still
// loads no gRPC.
import { build } from "esbuild";
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// Chunk names carry content hashes: without a clean directory every build leaves the last one's behind.
rmSync(join(here, "dist", "bundle"), { recursive: true, force: true });
await build({
  entryPoints: { boxmaker: join(here, "dist", "main.js") },
  outdir: join(here, "dist", "bundle"),
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  // CommonJS dependencies (grpc-js) call require(); ESM output has none of its own.
  banner: {
    js: "import { createRequire as __bxRequire } from 'node:module'; const require = __bxRequire(import.meta.url);",
  },
  logLevel: "warning",
});
