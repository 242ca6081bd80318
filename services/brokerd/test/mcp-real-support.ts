// Real MCP servers from npm (and small probe servers) for the brokerd MCP tests.

import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";
import { rig, type Rig } from "./helpers.js";

const NM = fileURLToPath(new URL("../../../node_modules/@modelcontextprotocol/", import.meta.url));
export const EVERYTHING = join(NM, "server-everything/dist/index.js");
export const FILESYSTEM = join(NM, "server-filesystem/dist/index.js");
export const PROBE = fileURLToPath(new URL("./fixtures/mcp-probe-server.mjs", import.meta.url));
export const ECHO = fileURLToPath(new URL("./fixtures/mcp-stdio-server.mjs", import.meta.url));
export const node = process.execPath;

export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((res) => s.listen(0, "127.0.0.1", () => res()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((res) => s.close(() => res()));
  return port;
}

export async function startEverythingHttp(port: number, children: ChildProcess[]): Promise<ChildProcess> {
  const c = spawn(node, [EVERYTHING, "streamableHttp"], {
    env: { ...process.env, PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(c);
  await new Promise<void>((res, rej) => {
    const t = setTimeout(() => rej(new Error("server-everything did not start")), 15_000);
    c.stderr!.on("data", (d: Buffer) => {
      if (/listening on port/.test(d.toString())) {
        clearTimeout(t);
        res();
      }
    });
  });
  return c;
}

/**
 * The brokerd rig and child processes of one test file, cleaned up after each
 * test; `viaCallTool` discloses a tool with find_tool, then calls it.
 */
export function useMcpRig() {
  const t: { r: Rig | undefined; children: ChildProcess[] } = { r: undefined, children: [] };
  afterEach(async () => {
    await t.r?.cleanup();
    t.r = undefined;
    for (const c of t.children.splice(0)) c.kill("SIGKILL");
  });
  return {
    get r(): Rig {
      return t.r!;
    },
    async start(...args: Parameters<typeof rig>): Promise<Rig> {
      t.r = await rig(...args);
      return t.r;
    },
    children: t.children,
    async viaCallTool(name: string, args: Record<string, unknown> = {}, session = "s1") {
      await t.r!.call("find_tool", { query: name }, session);
      return t.r!.call("call_tool", { name, arguments: args }, session);
    },
  };
}
