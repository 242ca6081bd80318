// An MCP server's sandbox must not reach the stack: what its program brings into
// the sandbox (the script's directory, its package), what the config binds, and
// the rlimits it runs under. The hostile server copies itself where a person might
// keep a script (/tmp above the runtime directory, a $HOME with ~/.ssh) and tries.
import { ConfigError } from "@boxmaker/common";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { copyFileSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { Broker } from "../src/broker.js";
import { bindExposes, stackDirs } from "../src/boundary.js";
import { parseBrokerConfig } from "../src/config.js";
import { programPaths } from "../src/mcp/program-paths.js";
import { PathMatcher } from "../src/policy/glob.js";
import { tempDir } from "../../../test/support/tmp.js";
import { requires } from "../../../test/support/requirements.js";
import { bwrapPath, silent } from "./helpers.js";
import { node, useMcpRig } from "./mcp-real-support.js";

const HOSTILE = fileURLToPath(new URL("./fixtures/mcp-hostile-server.mjs", import.meta.url));
const hasBwrap = requires("MCP servers in the bwrap sandbox", ["bwrap"]);
const m = useMcpRig();

let listener: Server | undefined;
afterEach(async () => {
  await new Promise<void>((res) => (listener ? listener.close(() => res()) : res()));
  listener = undefined;
});

/** Something listening where brokerd's socket would be: what a server reaching it could talk to. */
async function listenAt(path: string): Promise<void> {
  mkdirSync(dirname(path), { recursive: true });
  listener = createServer((s) => s.destroy());
  await new Promise<void>((res) => listener!.listen(path, () => res()));
}

/** A hostile server at `script` (copied there), with brokerd's socket and state beside the workspace. */
function hostileAt(script: string, extra: Record<string, unknown> = {}) {
  return ({ ws }: { ws: string }) => {
    mkdirSync(dirname(script), { recursive: true });
    copyFileSync(HOSTILE, script);
    const top = dirname(ws);
    return {
      socket: join(top, "run", "b.sock"),
      state_dir: join(top, "state"),
      mcp_servers: {
        evil: {
          transport: "stdio",
          command: node,
          args: [script],
          risk: "read",
          path_args: [],
          connect_timeout_ms: 15_000,
        },
      },
      ...extra,
    };
  };
}

async function probe(args: Record<string, unknown>) {
  const r = await m.viaCallTool("evil.probe", args);
  expect(r.isError, r.content).toBe(false);
  return JSON.parse(r.content) as Record<string, unknown>;
}

describe.skipIf(!hasBwrap)("a sandboxed server's program brings only itself", () => {
  it("a script in the directory that holds the runtime and state directories cannot connect to the socket or list them", async () => {
    let top = "";
    await m.start((dirs) => {
      top = dirname(dirs.ws);
      return hostileAt(join(top, "evil.mjs"))(dirs);
    });
    const sock = join(top, "run", "b.sock");
    await listenAt(sock);
    await m.r.broker.mcp.settled();
    expect(m.r.broker.status().mcpServers).toEqual(["evil: ready (3 tools)"]);
    const out = await probe({ connect: sock, list: top, read: join(top, "state", "disclosure.jsonl") });
    expect(out.connect).toBe("ENOENT");
    expect(out.list).not.toContain("run");
    expect(out.list).not.toContain("state");
    expect(out.read).toBe("ENOENT");
  });

  it("a script in a $HOME with package.json and ~/.ssh runs, and the key stays out of its sandbox", async () => {
    let home = "";
    await m.start(
      (dirs) => hostileAt(join(home, "bin", "server.mjs"))(dirs),
      ({ outside }) => {
        home = join(outside, "home");
        mkdirSync(join(home, ".ssh"), { recursive: true });
        writeFileSync(join(home, ".ssh", "id_ed25519"), "PRIVATE KEY");
        writeFileSync(join(home, "notes.txt"), "my notes");
        writeFileSync(join(home, "package.json"), JSON.stringify({ type: "module" }));
      },
    );
    await m.r.broker.mcp.settled();
    expect(m.r.broker.status().mcpServers).toEqual(["evil: ready (3 tools)"]);
    const out = await probe({ read: join(home, ".ssh", "id_ed25519"), list: home });
    expect(out.read).toBe("ENOENT");
    // Only the program and its package.json: nothing else of the home directory.
    expect(out.list).toEqual(expect.arrayContaining(["bin", "package.json"]));
    expect(out.list).not.toContain("notes.txt");
    expect(out.list).not.toContain(".ssh");
  });

  it("a script inside the runtime directory is refused with a status line, and never started", async () => {
    let top = "";
    await m.start((dirs) => {
      top = dirname(dirs.ws);
      return hostileAt(join(top, "run", "evil.mjs"))(dirs);
    });
    await m.r.broker.mcp.settled();
    const [line] = m.r.broker.status().mcpServers;
    expect(line).toMatch(
      /^evil: down \(refused to start it: its sandbox would bind \S+evil\.mjs lies inside brokerd's socket directory /,
    );
    expect(m.r.broker.mcp.get("evil")!.pids()).toEqual([]);
  });

  it("runs under the sandbox's rlimits, as commands do: a 512 MiB allocation fails", async () => {
    let top = "";
    const limits = {
      max_processes: 64,
      max_memory_bytes: 1024 * 1024 * 1024,
      max_file_bytes: 16 * 1024 * 1024,
      max_open_files: 64,
    };
    await m.start((dirs) => {
      top = dirname(dirs.ws);
      return hostileAt(join(top, "srv", "evil.mjs"), { sandbox: { bwrap_path: bwrapPath, limits } })(dirs);
    });
    await m.r.broker.mcp.settled();
    const lim = (await m.viaCallTool("evil.limits")).content;
    const soft = (name: string) => new RegExp(`^${name}\\s+(\\S+)`, "m").exec(lim)?.[1];
    expect(soft("Max processes")).toBe("64");
    expect(soft("Max open files")).toBe("64");
    expect(soft("Max data size")).toBe(String(limits.max_memory_bytes));
    expect(soft("Max file size")).toBe(String(limits.max_file_bytes));
    const out = await probe({ alloc_mb: 512, ...(process.getuid?.() !== 0 ? { spawn: 300 } : {}) });
    expect(out.alloc).toMatch(/^failed/);
    // RLIMIT_NPROC does not bind uid 0 (docs/architecture.md), so the fork bomb is checked only as another user.
    if (out.spawn) expect((out.spawn as { started: number }).started).toBeLessThan(300);
  });
});

describe("the start-up boundary check covers every configured bind", () => {
  const open = async (cfg: (d: { top: string; ws: string }) => Record<string, unknown>) => {
    const t = tempDir("bxk-");
    try {
      const ws = join(t.dir, "ws");
      mkdirSync(ws);
      const config = parseBrokerConfig({
        socket: join(t.dir, "run", "b.sock"),
        state_dir: join(t.dir, "state"),
        workspace_roots: [ws],
        log_level: "silent",
        sandbox: { bwrap_path: bwrapPath },
        ...cfg({ top: t.dir, ws }),
      });
      const b = await Broker.open(config, { log: silent });
      await b.close();
      return "opened";
    } catch (err) {
      if (err instanceof ConfigError) return err.message;
      throw err;
    } finally {
      t.cleanup();
    }
  };
  const server = (extra: Record<string, unknown>) => ({
    mcp_servers: { x: { transport: "stdio", command: node, args: [HOSTILE], ...extra } },
  });

  it("refuses a server's ro_paths or rw_paths, or sandbox.ro_paths, that contain or lie in the socket or state directory", async () => {
    expect(await open(({ top }) => server({ ro_paths: [top] }))).toMatch(
      /^key "mcp_servers\.x\.ro_paths": \S+ contains brokerd's socket directory .*could connect to the daemons/,
    );
    expect(await open(({ top }) => server({ rw_paths: [join(top, "state")] }))).toMatch(
      /^key "mcp_servers\.x\.rw_paths": \S+ contains brokerd's state directory/,
    );
    expect(await open(({ top }) => server({ ro_paths: [join(top, "run", "b.sock")] }))).toMatch(
      /^key "mcp_servers\.x\.ro_paths": \S+ lies inside brokerd's socket directory/,
    );
    expect(
      await open(({ top }) => ({ sandbox: { bwrap_path: bwrapPath, ro_paths: ["/usr", join(top, "state")] } })),
    ).toMatch(/^key "sandbox\.ro_paths": \S+ contains brokerd's state directory/);
    // A server that is not sandboxed binds nothing; a bind beside the stack is fine.
    expect(await open(({ top }) => server({ ro_paths: [top], sandbox: false }))).toBe("opened");
    expect(await open(({ ws }) => server({ ro_paths: [ws] }))).toBe("opened");
  });
});

describe("programPaths over generated layouts", () => {
  // A small universe of directories; each run places the stack, the script, package.json files,
  // secrets and node_modules among them.
  const DIRS = ["", "a", "a/b", "a/b/c", "a/x", "y"];
  const dir = fc.constantFrom(...DIRS);
  const subset = fc.subarray(DIRS);
  const secrets = new PathMatcher([".env", ".ssh", "id_*"], { ignoreCase: true });
  const holdsSecret = (d: string): boolean =>
    readdirSync(d, { withFileTypes: true }).some(
      (e) => secrets.matches(e.name, join(d, e.name)) || (e.isDirectory() && holdsSecret(join(d, e.name))),
    );

  it("never binds a directory holding the stack or a secret, and always brings the script", () => {
    let runs = 0;
    fc.assert(
      fc.property(
        fc.record({ run: dir, state: dir, script: dir, pkgs: subset, secretsIn: subset, nm: subset }),
        (l) => {
          const t = tempDir("bxp-");
          try {
            const at = (d: string) => join(t.dir, "r", d);
            for (const d of DIRS) mkdirSync(at(d), { recursive: true });
            for (const d of l.pkgs) writeFileSync(join(at(d), "package.json"), "{}");
            for (const d of l.secretsIn) writeFileSync(join(at(d), ".env"), "TOKEN=1");
            for (const d of l.nm) mkdirSync(join(at(d), "node_modules"), { recursive: true });
            const socket = join(at(l.run), "rt", "b.sock");
            const state = join(at(l.state), "st");
            mkdirSync(dirname(socket), { recursive: true });
            mkdirSync(state, { recursive: true });
            const script = join(at(l.script), "server.mjs");
            writeFileSync(script, "");
            const stack = stackDirs({ socket, state_dir: state });
            const paths = programPaths([node, script], {
              exposes: (p) => bindExposes(p, stack),
              isSecret: (rel, abs) => secrets.matches(rel, abs),
            });
            expect(paths.some((p) => p === script || !relative(p, script).startsWith(".."))).toBe(true);
            for (const p of paths) {
              if (!statSync(p).isDirectory()) continue;
              expect(bindExposes(p, stack), p).toBeUndefined();
              // node_modules is bound for its packages and not walked: the layouts put no secret in it.
              if (!p.endsWith("/node_modules")) expect(holdsSecret(p), p).toBe(false);
            }
            runs++;
          } finally {
            t.cleanup();
          }
        },
      ),
      { numRuns: 150 },
    );
    expect(runs).toBe(150);
  });
});
