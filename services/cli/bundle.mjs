#!/usr/bin/env node
// Bundles the built CLI (dist/main.js) into dist/bundle/: one module graph
// instead of hundreds of files saves ~50 ms on every `boxmaker` start, which a
// person feels. Lazy imports stay lazy (code splitting), so `--help` still
// loads no gRPC.
import { build } from "esbuild";
import { rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// Chunk names carry content hashes: without a clean directory every build leaves the last one's behind.
rmSync(join(here, "dist", "bundle"), { recursive: true, force: true });
await build({
  entryPoints: { cli: join(here, "dist", "main.js") },
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

// The entry only turns on Node's compile cache (V8's compiled code kept on disk
// under the temp dir) before the CLI's own modules load, so later starts skip
// compiling them. An `import` would be hoisted above the call: hence `import()`.
writeFileSync(
  join(here, "dist", "bundle", "boxmaker.js"),
  `#!/usr/bin/env node
import { enableCompileCache } from "node:module";
enableCompileCache?.();
await import("./cli.js");
`,
  { mode: 0o755 },
);
