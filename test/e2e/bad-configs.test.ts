import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn, execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import type { SchemaObject } from "@boxmaker/common";
import { loopdConfigSchema } from "../../services/loopd/src/config.js";
import { brokerConfigSchema } from "../../services/brokerd/src/config.js";
import { configSchema as inferproxyConfigSchema } from "../../services/inferproxy/src/config.js";
import { daemonMain } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";

/**
 * Every bad config a daemon is given ends the same way: exit 2 and one line
 * on stderr naming what is wrong, never a stack trace and exit 1 (which
 * systemd answers by restarting the daemon into the same failure). The bad
 * configs are generated from each daemon's own schema, so a key added later
 * is attacked too, and each is run through the real daemon binary.
 */

type Name = "loopd" | "brokerd" | "inferproxy";
const SCHEMAS: Record<Name, SchemaObject> = {
  loopd: loopdConfigSchema as SchemaObject,
  brokerd: brokerConfigSchema,
  inferproxy: inferproxyConfigSchema as SchemaObject,
};

/** A value spliced into the JSON text as it is: bytes JSON.stringify cannot write. */
class Raw {
  constructor(readonly bytes: Buffer) {}
}
const raw = (s: string | Buffer) => new Raw(typeof s === "string" ? Buffer.from(s) : s);

const DEEP = 20_000;
const SPECIAL = {
  infinity: raw("1e400"),
  deepArray: raw(`${"[".repeat(DEEP)}${"]".repeat(DEEP)}`),
  deepObject: raw(`${'{"a":'.repeat(DEEP)}1${"}".repeat(DEEP)}`),
  nonUtf8: raw(Buffer.from([0x22, 0x61, 0xff, 0xfe, 0xc3, 0x28, 0x22])),
};

/** The JSON text of `value`, with every Raw spliced in. */
function encode(value: unknown): Buffer {
  const raws: Raw[] = [];
  const text = JSON.stringify(value, (_k, v) => (v instanceof Raw ? `\u0000RAW${raws.push(v) - 1}\u0000` : v));
  const parts = text.split(/"\\u0000RAW(\d+)\\u0000"/);
  return Buffer.concat(parts.map((p, i) => (i % 2 ? raws[Number(p)]!.bytes : Buffer.from(p))));
}

interface Site {
  path: string[];
  schema: SchemaObject;
}

/** Every key the schema names, nested objects included (array items and map values as a whole). */
function sites(schema: SchemaObject, path: string[] = []): Site[] {
  const out: Site[] = [];
  for (const [k, s] of Object.entries((schema.properties ?? {}) as Record<string, SchemaObject>)) {
    out.push({ path: [...path, k], schema: s });
    if (s.type === "object" && s.properties) out.push(...sites(s, [...path, k]));
  }
  return out;
}

const SAMPLES: Array<[string, unknown]> = [
  ["null", null],
  ["boolean", true],
  ["integer", 7],
  ["number", 1.5],
  ["string", "x"],
  ["array", [1, "two"]],
  ["object", { k: 1 }],
];

/** Values the key's schema refuses: wrong types, out of range, too long for a socket, undecodable, too deep. */
function badValues(site: Site): unknown[] {
  const s = site.schema;
  const key = site.path.at(-1)!;
  const types: string[] | undefined =
    s.type === undefined ? undefined : [s.type].flat().concat(s.nullable ? ["null"] : []);
  const out: unknown[] = [SPECIAL.deepArray, SPECIAL.deepObject];
  if (types) {
    for (const [t, v] of SAMPLES) {
      const ok = types.includes(t) || (t === "integer" && types.includes("number"));
      if (!ok) out.push(v);
    }
  }
  if (types?.includes("integer") || types?.includes("number")) {
    out.push(SPECIAL.infinity, 1e300);
    if (typeof s.minimum === "number") out.push(s.minimum - 1, -1e300);
    if (typeof s.exclusiveMinimum === "number") out.push(s.exclusiveMinimum);
    if (typeof s.maximum === "number") out.push(s.maximum + 1);
    if (key.endsWith("_ms")) out.push(2 ** 31, 2 ** 53);
  }
  if (types?.includes("string")) {
    if (s.enum) out.push("no-such-value");
    else out.push(SPECIAL.nonUtf8);
    if (s.minLength) out.push("");
    if (s.pattern) out.push("\u0000 matches no pattern\nsecond line");
    if (/socket/.test(key)) out.push(`/tmp/${"s".repeat(120)}.sock`);
  }
  if (types?.includes("array")) out.push([null], [[[]]], [SPECIAL.nonUtf8]);
  if (types?.includes("object")) {
    out.push({ "no such key": 1 }, { "key with\na newline": 1 }, { [`k${"x".repeat(5000)}`]: 1 });
  }
  return out;
}

/** `base` with the value at `path` replaced. */
function withValue(base: Record<string, unknown>, path: string[], value: unknown): Record<string, unknown> {
  const copy = structuredClone(base);
  let o = copy as Record<string, unknown>;
  for (const k of path.slice(0, -1)) {
    if (typeof o[k] !== "object" || o[k] === null || Array.isArray(o[k])) o[k] = {};
    o = o[k] as Record<string, unknown>;
  }
  o[path.at(-1)!] = value;
  return copy;
}

/** A config each daemon would start on: the attack changes one thing in it. */
function baseConfig(name: Name, dir: string): Record<string, unknown> {
  const run = join(dir, "run");
  mkdirSync(join(dir, "ws"), { recursive: true });
  switch (name) {
    case "loopd":
      return {
        socket: join(run, "loopd.sock"),
        state_dir: join(dir, "loopd"),
        inferproxy_socket: join(run, "inferproxy.sock"),
        brokerd_socket: join(run, "brokerd.sock"),
        log_level: "warn",
      };
    case "brokerd":
      return {
        socket: join(run, "brokerd.sock"),
        state_dir: join(dir, "broker"),
        workspace_roots: [join(dir, "ws")],
        sandbox: { mode: "none", allow_unsandboxed: true },
        log_level: "warn",
      };
    case "inferproxy":
      return {
        socket: join(run, "inferproxy.sock"),
        upstream: { socket_path: join(run, "llama.sock") },
        log_level: "warn",
      };
  }
}

interface Case {
  name: Name;
  what: string;
  /** The config file's path, or its content (written to a fresh file). */
  file: { path: string } | { content: Buffer };
  /** Run without the capabilities that let root read any file. */
  dropDac?: boolean;
}

interface Outcome {
  code: number | null;
  signal: string | null;
  stderr: string;
}

function runDaemon(c: Case, dir: string, i: number): Promise<Outcome> {
  let path: string;
  if ("path" in c.file) path = c.file.path;
  else {
    path = join(dir, `c${i}.json`);
    writeFileSync(path, c.file.content);
  }
  const argv = [daemonMain(c.name), "--config", path];
  const [cmd, args] = c.dropDac
    ? ["setpriv", ["--bounding-set=-dac_override,-dac_read_search", process.execPath, ...argv]]
    : [process.execPath, argv];
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ["ignore", "ignore", "pipe"], cwd: dir });
    let stderr = "";
    p.stderr!.on("data", (b: Buffer) => {
      if (stderr.length < 1_000_000) stderr += b.toString();
    });
    // A daemon that starts on a bad config (or hangs reading it) is a failure, not a wait.
    const timer = setTimeout(() => p.kill("SIGKILL"), 20_000);
    p.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

/** What is wrong with how a daemon ended on a bad config; undefined when it is right. */
function verdict(o: Outcome): string | undefined {
  const lines = o.stderr.split("\n").filter((l) => l !== "");
  // Structured log lines before the error (a warning about the machine) are not the error.
  const plain = lines.filter((l) => !l.startsWith('{"level":'));
  if (o.code !== 2) return `exit ${o.code ?? o.signal}: ${o.stderr.slice(0, 600)}`;
  if (lines.some((l) => /^\s+at /.test(l))) return `a stack trace: ${o.stderr.slice(0, 600)}`;
  if (plain.length !== 1) return `${plain.length} lines: ${o.stderr.slice(0, 600)}`;
  if (plain[0]!.length > 2_000) return `a line of ${plain[0]!.length} characters`;
  return undefined;
}

async function runAll(cases: Case[], dir: string): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  // Two at a time: the machine is shared, and each run is a whole Node start.
  await Promise.all(
    [0, 1].map(async () => {
      while (next < cases.length) {
        const i = next++;
        const c = cases[i]!;
        const bad = verdict(await runDaemon(c, dir, i));
        if (bad) failures.push(`${c.name} ${c.what}: ${bad}`);
      }
    }),
  );
  return failures;
}

const NAMES: Name[] = ["loopd", "brokerd", "inferproxy"];

describe("every bad config is one line and exit 2, from the real daemon binaries", () => {
  let t: ReturnType<typeof tempDir>;
  beforeAll(() => {
    t = tempDir("bxcfg-");
    mkdirSync(join(t.dir, "run"));
    mkdirSync(join(t.dir, "ws"));
  });
  afterAll(() => t.cleanup());

  it("whole files that are not a config: empty, null, an array, bytes, a directory, a FIFO, a device, unreadable", async () => {
    const d = t.dir;
    writeFileSync(join(d, "a-file"), "");
    execFileSync("mkfifo", [join(d, "fifo")]);
    symlinkSync(join(d, "fifo"), join(d, "fifo-link"));
    writeFileSync(join(d, "unreadable.json"), "{}");
    chmodSync(join(d, "unreadable.json"), 0o000);
    const contents: Array<[string, Buffer]> = [
      ["an empty file", Buffer.alloc(0)],
      ["null", Buffer.from("null")],
      ["an array", Buffer.from("[]")],
      ["a number", Buffer.from("42")],
      ["a string", Buffer.from('"x"')],
      ["truncated JSON", Buffer.from('{"socket":')],
      ["non-UTF-8 bytes", Buffer.from([0xff, 0xfe, 0x7b, 0x7d])],
      ["a BOM", Buffer.from("\ufeff{}")],
      ["deeply nested arrays", encode(SPECIAL.deepArray)],
      ["deeply nested objects", encode(SPECIAL.deepObject)],
      ["100,000 nested arrays", Buffer.from(`${"[".repeat(100_000)}${"]".repeat(100_000)}`)],
    ];
    const cases: Case[] = NAMES.flatMap((name) => [
      ...contents.map(([what, content]): Case => ({ name, what, file: { content } })),
      { name, what: "a missing file", file: { path: join(d, "missing.json") } },
      { name, what: "a directory", file: { path: join(d, "ws") } },
      { name, what: "a FIFO", file: { path: join(d, "fifo") } },
      { name, what: "a symlink to a FIFO", file: { path: join(d, "fifo-link") } },
      { name, what: "/dev/zero", file: { path: "/dev/zero" } },
      { name, what: "an unreadable file", file: { path: join(d, "unreadable.json") }, dropDac: true },
      { name, what: "an empty path", file: { path: "" } },
    ]);
    const failures = await runAll(cases, d);
    expect(failures).toEqual([]);
    expect(cases.length).toBe(NAMES.length * (contents.length + 7));
  }, 300_000);

  it("paths a daemon cannot use: its socket or state directory under a file, in /proc, in a directory it may not write", async () => {
    const d = join(t.dir, "paths");
    mkdirSync(join(d, "locked"), { recursive: true });
    writeFileSync(join(d, "a-file"), "");
    chmodSync(join(d, "locked"), 0o555);
    const bad: Array<[string, string]> = [
      ["under a file", join(d, "a-file", "x")],
      ["in /proc", "/proc/boxmaker-none/x"],
      ["in a read-only directory", join(d, "locked", "x")],
    ];
    let n = 0;
    const keys = (name: Name) => (name === "inferproxy" ? ["socket"] : ["socket", "state_dir"]);
    const cases: Case[] = NAMES.flatMap((name) =>
      bad.flatMap(([where, path]) =>
        keys(name).map(
          (key): Case => ({
            name,
            what: `${key} ${where}`,
            file: {
              content: encode({
                ...baseConfig(name, join(d, String(n++))),
                [key]: key === "socket" ? `${path}.sock` : path,
              }),
            },
            // Root writes anywhere; without these capabilities a read-only directory is one.
            dropDac: true,
          }),
        ),
      ),
    );
    const failures = await runAll(cases, d);
    expect(failures).toEqual([]);
    expect(cases).toHaveLength(15);
  }, 300_000);

  it("brokerd: a policy rule that can never match is refused at start, naming the rule", async () => {
    const d = join(t.dir, "rules");
    mkdirSync(d, { recursive: true });
    const bad: Array<[string, Record<string, unknown>, RegExp]> = [
      ["a URL as a host", { tool: "fetch_url", effect: "deny", hosts: ["https://evil.test/"] }, /host .* URL/],
      ["a port on a host", { tool: "fetch_url", effect: "deny", hosts: ["evil.test:443"] }, /port/],
      ["a misspelt tool", { tool: "fetch_ulr", effect: "deny" }, /"fetch_ulr" is not a tool/],
      ["a glob over no tool", { tool: "gh.*", effect: "deny" }, /matches no tool/],
      ["a path with ..", { tool: "read_file", effect: "deny", paths: ["../private/**"] }, /\.\. segment/],
      ["a path ending in /", { tool: "write_file", effect: "deny", paths: ["secrets/"] }, /ends in \//],
      ["prefixes on a file tool", { tool: "read_file", effect: "deny", command_prefixes: ["cat"] }, /run_command/],
      ["an empty list", { tool: "fetch_url", effect: "deny", hosts: [] }, /empty list/],
    ];
    const cases: Case[] = bad.map(([what, rule], i) => ({
      name: "brokerd",
      what,
      file: {
        content: encode({ ...baseConfig("brokerd", join(d, String(i))), policy: { rules: [{ name: "r", ...rule }] } }),
      },
    }));
    const outcomes = await Promise.all(cases.map((c, i) => runDaemon(c, d, i)));
    outcomes.forEach((o, i) => {
      expect(verdict(o), cases[i]!.what).toBeUndefined();
      expect(o.stderr, cases[i]!.what).toMatch(/policy\.rules\[0\] \(r\)/);
      expect(o.stderr, cases[i]!.what).toMatch(bad[i]![2]);
    });
  }, 120_000);

  it.each(NAMES)(
    "%s: generated bad values at every key of its schema",
    async (name) => {
      const all = sites(SCHEMAS[name]).flatMap((site) => badValues(site).map((value) => ({ site, value })));
      // Every key is attacked at least once; the rest is a random sample (a whole Node start per config).
      const firstPerKey = new Map<string, (typeof all)[number]>();
      for (const a of all) if (!firstPerKey.has(a.site.path.join("."))) firstPerKey.set(a.site.path.join("."), a);
      const sample = fc.sample(fc.constantFrom(...all), { numRuns: 40 });
      const chosen = [...firstPerKey.values(), ...sample];
      // Each config its own directories: one that a daemon wrongly starts on holds no socket another needs.
      let n = 0;
      const base = () => baseConfig(name, join(t.dir, name, String(n++)));
      const cases: Case[] = chosen.map(({ site, value }) => ({
        name,
        what: `${site.path.join(".")} = ${encode(value).toString("latin1").slice(0, 60)}`,
        file: { content: encode(withValue(base(), site.path, value)) },
      }));
      // Unknown keys, at the top and inside each object.
      for (const site of [{ path: [] as string[] }, ...sites(SCHEMAS[name]).filter((s) => s.schema.properties)]) {
        cases.push({
          name,
          what: `an unknown key in ${site.path.join(".") || "(root)"}`,
          file: { content: encode(withValue(base(), [...site.path, "not\na key"], 1)) },
        });
      }
      const failures = await runAll(cases, t.dir);
      expect(failures).toEqual([]);
      expect(cases.length).toBeGreaterThan(40);
    },
    600_000,
  );
});
