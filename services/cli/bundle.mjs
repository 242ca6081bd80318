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

// grpc-js requires @grpc/proto-loader (with protobufjs, ~290 kB) only inside
// its channelz and ORCA services, which nothing here serves or turns on
// (channelz is off in every channel: grpc-client.ts). Left out, every start
// skips reading and parsing them; a require that did come would say why.
const unusedByTheCli = {
  name: "unused-by-the-cli",
  setup(b) {
    b.onResolve({ filter: /^@grpc\/proto-loader$/ }, (args) => ({ path: args.path, namespace: "unused" }));
    b.onLoad({ filter: /.*/, namespace: "unused" }, (args) => ({
      contents: `throw new Error("${args.path} is not in the CLI's bundle (bundle.mjs)");`,
      loader: "js",
    }));
  },
};
// Chunk names carry content hashes: without a clean directory every build leaves the last one's behind.
rmSync(join(here, "dist", "bundle"), { recursive: true, force: true });
const result = await build({
  entryPoints: { cli: join(here, "dist", "main.js") },
  // Inputs named from the repository's root in the metafile below.
  absWorkingDir: join(here, "..", ".."),
  // Which chunk holds which module: test/e2e/cli-modules.test.ts reads it to
  // tell what a command loaded from the chunks it read.
  metafile: true,
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
  plugins: [unusedByTheCli],
  logLevel: "warning",
});
writeFileSync(join(here, "dist", "bundle-meta.json"), JSON.stringify(result.metafile));

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
