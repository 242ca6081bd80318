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

// The entry checks Node's version before anything else loads: the CLI needs
// Node 22.12 (package.json "engines"), and on an older one its modules die
// with a SyntaxError that names no version. So the entry has no static import
// (an ES module's imports load before its first line runs, and one that fails
// stops it there) and no syntax newer than the Node it is guarding against;
// only once the version passes does it turn on Node's compile cache (V8's
// compiled code kept on disk under the temp dir, so later starts skip
// compiling; getBuiltinModule is Node 22.3's, so synchronous, before the CLI
// starts loading) and import() the CLI.
writeFileSync(
  join(here, "dist", "bundle", "boxmaker.js"),
  `#!/usr/bin/env node
var v = process.versions.node.split(".");
var major = Number(v[0]);
var minor = Number(v[1]);
if (major < 22 || (major === 22 && minor < 12)) {
  process.stderr.write("Boxmaker needs Node \\u2265 22.12; this is " + process.versions.node + "\\n");
  process.exit(1);
}
process.getBuiltinModule("node:module").enableCompileCache();
import("./cli.js");
`,
  { mode: 0o755 },
);
