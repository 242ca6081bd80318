"use strict";
// Runs a CommonJS bundle of a library (grpc-js) with a V8 code cache made
// *after* a run, beside Node's compile cache. Node's cache is made when a
// module is compiled, so it holds only the code that runs at load; a bundled
// library's modules are functions V8 compiles when they are first called, so
// every start compiled grpc-js again (the bulk of what `boxmaker status`
// spent beyond the old hand-written client). A cache made at exit holds every
// function that run compiled; the next start deserializes them instead.
//
// The cache lives in Node's compile cache directory (so NODE_COMPILE_CACHE
// moves it and NODE_DISABLE_COMPILE_CACHE turns it off), and a cache file is
// used only if this user owns it and nobody else can write it: a cache is
// code, and one planted by another user would run as this one.
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");
const { Module, getCompileCacheDir } = require("node:module");
const { channel } = require("node:diagnostics_channel");

// What ran and whether its cache served ("hit", "miss", "rejected", "off"), for
// tools that account for what a command loaded (the tests' module report).
const loads = channel("boxmaker:code-cache:load");
const loaded = new Map();

/** The directory to read and write caches in, or undefined when there is none this user can trust. */
function cacheDir() {
  const base = getCompileCacheDir();
  if (!base) return undefined;
  const dir = path.join(base, "boxmaker");
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = fs.statSync(dir);
    if (st.uid !== process.getuid() || (st.mode & 0o022) !== 0) return undefined;
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * The cache's bytes, if the file is this user's and nobody else can write it.
 * Checked on the open file itself: a check of the path before the read would
 * leave a moment to swap the file.
 */
function readCache(file) {
  let fd;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== process.getuid() || (st.mode & 0o022) !== 0) return undefined;
    return fs.readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

// Caches of other builds of the same bundle kept beside this one's: a few
// installs (a checkout and a release, say) each keep theirs, and a year of
// upgrades does not pile up.
const KEEP_OTHERS = 3;

/** Writes the cache whole or not at all, and drops all but the newest few that other builds of the file left. */
function writeCache(dir, cacheFile, data, prefix) {
  try {
    const tmp = `${cacheFile}.${process.pid}.tmp`;
    // "wx": never through a file (or a link) someone put there first.
    fs.writeFileSync(tmp, data, { mode: 0o600, flag: "wx" });
    fs.renameSync(tmp, cacheFile);
    const others = fs
      .readdirSync(dir)
      .filter((name) => name.startsWith(prefix) && name.endsWith(".v8cache") && path.join(dir, name) !== cacheFile)
      .map((name) => ({ file: path.join(dir, name), mtimeMs: fs.statSync(path.join(dir, name)).mtimeMs }))
      .sort((a, b) => b.mtimeMs - a.mtimeMs);
    for (const old of others.slice(KEEP_OTHERS)) fs.rmSync(old.file, { force: true });
  } catch {
    // A cache is an optimization: a full or read-only disk costs the next start its compile time, nothing more.
  }
}

/**
 * The exports of the CommonJS bundle `file` (beside this one; its name carries
 * its content hash, so a rebuilt bundle never meets an old cache).
 * @param {string} file
 */
module.exports = function requireWithCodeCache(file) {
  const done = loaded.get(file);
  if (done) return done.exports;
  const filename = path.join(__dirname, file);
  const source = fs.readFileSync(filename, "utf8");
  const dir = cacheDir();
  // V8 rejects a cache from another V8 or other flags itself (cachedDataRejected); the name keeps one per V8.
  const prefix = `${path.basename(file, ".cjs").replace(/-[A-Z0-9]+$/, "")}-`;
  const cacheFile = dir && path.join(dir, `${path.basename(file, ".cjs")}-${process.versions.v8}.v8cache`);
  const cachedData = cacheFile && readCache(cacheFile);
  const script = new vm.Script(Module.wrap(source), { filename, cachedData });
  const cache = !cacheFile ? "off" : !cachedData ? "miss" : script.cachedDataRejected ? "rejected" : "hit";
  const mod = { exports: {}, filename, loaded: false };
  loaded.set(file, mod);
  script.runInThisContext()(mod.exports, Module.createRequire(filename), mod, filename, __dirname);
  mod.loaded = true;
  if (loads.hasSubscribers) loads.publish({ filename, cache });
  // Only a run that succeeded writes the cache: one that failed early (loopd down, a usage error) compiled
  // its error path, and a cache made of that would serve every later run that does the real work.
  if (cache === "miss" || cache === "rejected")
    process.once("exit", (code) => {
      if (code === 0) writeCache(dir, cacheFile, script.createCachedData(), prefix);
    });
  return mod.exports;
};
