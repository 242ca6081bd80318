// What a command loads is start-up time a person waits through on every run.
// The CLI runs as its bundle against a loopd served by grpc-js (the daemons'
// own adapter); a reporter preloaded into it records every file it read, and
// the bundle's metafile says which modules each of those chunks holds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { addService, LoopService, prepareSocketPath, type ImplOf } from "@boxmaker/common";
import { repoRoot, runCli } from "../../../test/support/stack.js";
import { tempDir } from "../../../test/support/tmp.js";

const REPORTER = join(repoRoot, "test/fixtures/module-report/report.cjs");
const META = join(repoRoot, "services/cli/dist/bundle-meta.json");

let tmp: ReturnType<typeof tempDir>;
let server: grpc.Server;
let sock: string;

beforeAll(async () => {
  tmp = tempDir("bx-loads-");
  sock = join(tmp.dir, "loopd.sock");
  // Every method answers with an empty reply (or an empty stream): enough for a command to run its whole path.
  const impl: Record<string, unknown> = {};
  for (const m of LoopService.methods)
    impl[m.localName] = m.methodKind === "unary" ? async () => ({}) : async function* () {};
  server = new grpc.Server();
  addService(server, LoopService, impl as ImplOf<typeof LoopService>);
  await prepareSocketPath(sock);
  await new Promise<void>((res, rej) =>
    server.bindAsync(`unix://${sock}`, grpc.ServerCredentials.createInsecure(), (e) => (e ? rej(e) : res())),
  );
});
afterAll(async () => {
  await new Promise<void>((r) => server.tryShutdown(() => r()));
  tmp.cleanup();
});

/** The modules (repository-relative, as esbuild names them) and Node built-ins one run of `boxmaker ARGS` loaded. */
async function loaded(args: string[]): Promise<{ modules: string[]; builtins: string[] }> {
  const reports = join(tmp.dir, "reports");
  rmSync(reports, { recursive: true, force: true });
  mkdirSync(reports);
  const r = await runCli(args, {
    env: { BOXMAKER_SOCKET: sock, NODE_OPTIONS: `--require ${REPORTER}`, BOXMAKER_MODULE_REPORT_DIR: reports },
    timeoutMs: 20_000,
  });
  // Empty replies may read as a stack that is down (`status` exits 6 then), but every call was answered.
  expect([0, 1, 6], `boxmaker ${args.join(" ")}: ${r.stderr}`).toContain(r.code);
  expect(r.stderr).not.toMatch(/cannot reach|deadline exceeded|\((UNAVAILABLE|UNIMPLEMENTED|INTERNAL)\)/);
  const [file] = readdirSync(reports);
  const report = JSON.parse(readFileSync(join(reports, file!), "utf8")) as { files: string[]; builtins: string[] };
  const meta = JSON.parse(readFileSync(META, "utf8")) as {
    outputs: Record<string, { inputs: Record<string, unknown> }>;
  };
  const modules = new Set<string>();
  for (const url of report.files) {
    const chunk = meta.outputs[relative(repoRoot, fileURLToPath(url))];
    if (!chunk) continue; // the reporter's own file, the launcher
    for (const input of Object.keys(chunk.inputs)) modules.add(input);
  }
  return { modules: [...modules], builtins: report.builtins };
}

const matching = (modules: string[], re: RegExp) => modules.filter((m) => re.test(m));

// What neither command uses: the chat, turn and approval code, the supervisor of `up`, the
// renderers of sessions and proposals. (grpc-js's server is loaded with its index; InferService's
// descriptors are needed: loop.proto imports infer.proto. Chat's list of slash commands is
// loaded, since chat's --help is made from it; what each one runs is loaded when it runs.)
const NOT_FOR_LOOPD_READS =
  /services\/cli\/dist\/(prompt-reader|in-place-approval|turn-stream|supervisor\/|render\/(turn-renderer|turn-event-text|transcript|history|proposal))\.?/;

describe("what a command loads", () => {
  it.each([["status"], ["ls"]])("`boxmaker %s` loads loopd's client and nothing it does not use", async (cmd) => {
    const { modules, builtins } = await loaded([cmd]);
    // What it does use, so that a reporter that saw nothing cannot pass.
    expect(matching(modules, /gen\/boxmaker\/v1\/loop_pb\.js$/)).toHaveLength(1);
    expect(matching(modules, /@grpc\/grpc-js\/build\/src\/client\.js$/)).toHaveLength(1);
    expect(matching(modules, NOT_FOR_LOOPD_READS)).toEqual([]);
    // Each command's own renderer only.
    expect(matching(modules, /services\/cli\/dist\/render\/status\.js$/)).toHaveLength(cmd === "status" ? 1 : 0);
    // Node's own modules the libraries require at load but only paths the CLI never takes use
    // (compression, DNS, subprocesses: bundle.mjs), and none of the terminal's.
    expect(builtins.filter((b) => /^NativeModule (readline|repl|zlib|dns|child_process)$/.test(b))).toEqual([]);
  });

  it("a TAB after `boxmaker show` (its session ids) loads loopd's client and nothing it does not use", async () => {
    const { modules, builtins } = await loaded(["__complete", "--", "show", ""]);
    expect(matching(modules, /gen\/boxmaker\/v1\/loop_pb\.js$/)).toHaveLength(1);
    expect(matching(modules, /services\/cli\/dist\/completion\/ids\.js$/)).toHaveLength(1);
    expect(matching(modules, NOT_FOR_LOOPD_READS)).toEqual([]);
    expect(matching(modules, /services\/cli\/dist\/render\/(status|history)\.js$/)).toEqual([]);
    expect(builtins.filter((b) => /^NativeModule (readline|repl|zlib|dns|child_process)$/.test(b))).toEqual([]);
  });

  it.each([[["--help"]], [["__complete", "--", "sh"]]])(
    "`boxmaker %j` loads no gRPC, no protobuf, no crypto and no subprocess code",
    async (args) => {
      const { modules, builtins } = await loaded(args);
      expect(matching(modules, /services\/cli\/dist\/main\.js$/)).toHaveLength(1);
      expect(matching(modules, /node_modules\/commander\/lib\/command\.js$/)).toHaveLength(1);
      expect(matching(modules, /@grpc\/|@bufbuild\/protobuf\/|_pb\.js$/)).toEqual([]);
      expect(
        builtins.filter((b) => /^NativeModule (crypto|child_process|http2|stream\/consumers|readline)$/.test(b)),
      ).toEqual([]);
    },
  );
});
