#!/usr/bin/env node
// Bundles the built CLI (dist/main.js) into dist/bundle/: one module graph
// instead of hundreds of files saves ~50 ms on every `boxmaker` start, which a
// person feels. Lazy imports stay lazy (code splitting), so `--help` still
// loads no gRPC.
import { build } from "esbuild";
import { copyFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { CLI_NODE_FLAGS } from "../common/dist/stack-defaults.js";

const here = dirname(fileURLToPath(import.meta.url));

const root = join(here, "..", "..");
const out = join(here, "dist", "bundle");
// Chunk names carry content hashes: without a clean directory every build leaves the last one's behind.
rmSync(out, { recursive: true, force: true });

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

// A stand-in for a module that requires the real one on first use: what a
// library requires at load and uses only on paths the CLI never takes.
const standIn = (request) => `let real;
const load = () => (real ??= require(${JSON.stringify(request)}));
module.exports = new Proxy({}, {
  get: (_, key) => Reflect.get(load(), key),
  has: (_, key) => Reflect.has(load(), key),
  ownKeys: () => Reflect.ownKeys(load()),
  getOwnPropertyDescriptor: (_, key) => {
    const d = Reflect.getOwnPropertyDescriptor(load(), key);
    return d && { ...d, configurable: true };
  },
});`;

// Loaded only when used, each by whom and why:
// - grpc-js's zlib (message compression, which no channel turns on) and dns
//   (its DNS resolver; every target here is unix:), Node built-ins;
// - grpc-js's server half (server, its credentials, interceptors, the admin
//   and ORCA services), which index.js requires and re-exports through
//   getters, so only `grpc.Server` and its kin would load it;
// - commander's child_process (executable subcommands, which Boxmaker has none of).
const LOAD_WHEN_USED = [
  { importer: /node_modules\/@grpc\/grpc-js\//, request: /^(node:)?(zlib|dns)$/ },
  {
    importer: /node_modules\/@grpc\/grpc-js\/build\/src\/index\.js$/,
    request: /^\.\/(server|server-credentials|server-interceptors|admin|orca)$/,
  },
  { importer: /node_modules\/commander\//, request: /^(node:)?child_process$/ },
];
const loadWhenUsed = {
  name: "load-when-used",
  setup(b) {
    b.onResolve({ filter: /^(node:)?[a-z_]+$|^\.\/[a-z-]+$/ }, (args) => {
      if (args.namespace !== "file") return undefined;
      if (!LOAD_WHEN_USED.some((l) => l.importer.test(args.importer) && l.request.test(args.path))) return undefined;
      const request = args.path.startsWith(".") ? args.path : `node:${args.path.replace(/^node:/, "")}`;
      return { path: request, namespace: "stand-in", pluginData: args.resolveDir };
    });
    b.onLoad({ filter: /.*/, namespace: "stand-in" }, (args) => ({
      contents: standIn(args.path),
      resolveDir: args.pluginData,
      loader: "js",
    }));
  },
};

// CommonJS libraries on every command's path (commander) or every command
// that talks to loopd (grpc-js, 580 kB) each become a CommonJS bundle that
// code-cache.cjs runs with a code cache made after a run (why: there). The
// CLI's chunks require them through it. Each name carries a content hash, the
// cache's key: a rebuilt library never meets an old cache.
const CODE_CACHED = [
  { name: "grpc-js", request: "@grpc/grpc-js", plugins: [unusedByTheCli, loadWhenUsed] },
  { name: "commander", request: "commander", plugins: [loadWhenUsed] },
];
const codeCached = [];
for (const lib of CODE_CACHED) {
  const r = await build({
    entryPoints: { [lib.name]: lib.request },
    entryNames: "[name]-[hash]",
    absWorkingDir: root,
    // Each library from where the workspace that depends on it finds it.
    nodePaths: [join(here, "node_modules"), join(here, "..", "common", "node_modules"), join(root, "node_modules")],
    metafile: true,
    outdir: out,
    outExtension: { ".js": ".cjs" },
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node22",
    plugins: lib.plugins,
    logLevel: "warning",
  });
  const file = Object.keys(r.metafile.outputs).find((o) => o.endsWith(".cjs"));
  codeCached.push({ ...lib, file: file.split("/").pop(), outputs: r.metafile.outputs });
}
copyFileSync(join(here, "code-cache.cjs"), join(out, "code-cache.cjs"));
const requireCodeCached = {
  name: "require-code-cached",
  setup(b) {
    for (const lib of codeCached) {
      const filter = new RegExp(`^${lib.request.replace(/[/.]/g, "\\$&")}$`);
      b.onResolve({ filter }, () => ({ path: lib.file, namespace: "code-cached" }));
    }
    b.onResolve({ filter: /^\.\/code-cache\.cjs$/ }, (args) => ({ path: args.path, external: true }));
    b.onLoad({ filter: /.*/, namespace: "code-cached" }, (args) => ({
      contents: `module.exports = require("./code-cache.cjs")(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

const result = await build({
  entryPoints: { cli: join(here, "dist", "main.js") },
  // Inputs named from the repository's root in the metafile below.
  absWorkingDir: root,
  // Which output holds which module: test/loads-only-what-it-uses.test.ts
  // reads it to tell what a command loaded from the files it ran.
  metafile: true,
  outdir: out,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node22",
  // The CommonJS stand-ins call require(); ESM output has none of its own.
  banner: {
    js: "import { createRequire as __bxRequire } from 'node:module'; const require = __bxRequire(import.meta.url);",
  },
  plugins: [requireCodeCached],
  logLevel: "warning",
});
const outputs = { ...result.metafile.outputs };
for (const lib of codeCached) Object.assign(outputs, lib.outputs);
writeFileSync(join(here, "dist", "bundle-meta.json"), JSON.stringify({ outputs }));

// The entry checks Node's version before anything else loads: the CLI needs
// Node 22.13, or 23.4 on Node 23 (package.json "engines": the daemons' state
// directory lock uses node:sqlite, behind a flag before those), and on an older one its modules die
// with a SyntaxError that names no version. So the entry has no static import
// (an ES module's imports load before its first line runs, and one that fails
// stops it there) and no syntax newer than the Node it is guarding against;
// only once the version passes does it turn on Node's compile cache (V8's
// compiled code kept on disk under the temp dir, so later starts skip
// compiling; getBuiltinModule is Node 22.3's, so synchronous, before the CLI
// starts loading) and import() the CLI. Its #! line gives Node the CLI's
// flags (stack-defaults.ts), which must be there before the heap is made.
writeFileSync(
  join(here, "dist", "bundle", "boxmaker.js"),
  `#!/usr/bin/env -S node ${CLI_NODE_FLAGS.join(" ")}
var v = process.versions.node.split(".");
var major = Number(v[0]);
var minor = Number(v[1]);
if (major < 22 || (major === 22 && minor < 13) || (major === 23 && minor < 4)) {
  process.stderr.write("Boxmaker needs Node \\u2265 22.13 (\\u2265 23.4 on Node 23); this is " + process.versions.node + "\\n");
  process.exit(1);
}
process.getBuiltinModule("node:module").enableCompileCache();
import("./cli.js");
`,
  { mode: 0o755 },
);
