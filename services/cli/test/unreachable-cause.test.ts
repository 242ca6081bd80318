// The cannot-reach line says what actually went wrong with loopd's socket,
// where the CLI got the path from, and what to do about it.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, chownSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cliArgv } from "../../../test/support/stack.js";
import { tempDir } from "../../../test/support/tmp.js";

const root = process.getuid?.() === 0;

/**
 * The CLI as a user without root's override of file modes: root keeps its uid
 * but runs with no capabilities (setpriv), so the socket's mode bits decide.
 */
async function cliAsUser(args: string[], env: Record<string, string>) {
  const argv = [process.execPath, ...cliArgv(args)];
  const [cmd, ...rest] = root ? ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", ...argv] : argv;
  const proc = spawn(cmd!, rest, { env: { PATH: process.env.PATH ?? "", NO_COLOR: "1", ...env } });
  let stderr = "";
  proc.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const [code] = (await once(proc, "exit")) as [number | null];
  return { code, stderr };
}

describe("cannot reach loopd: the cause, and where the path came from", () => {
  let tmp: ReturnType<typeof tempDir>;
  let env: Record<string, string>;
  let server: Server | undefined;
  beforeEach(() => {
    tmp = tempDir("bx-cause-");
    // An empty home and runtime dir: no cli.json, no stack recorded.
    env = { HOME: tmp.dir, XDG_RUNTIME_DIR: tmp.dir };
  });
  afterEach(async () => {
    if (server) await new Promise((r) => server!.close(r));
    server = undefined;
    tmp.cleanup();
  });
  const listen = async (path: string) => {
    server = createServer((c) => c.destroy());
    server.listen(path);
    await once(server, "listening");
  };

  it("no such socket, and nobody listening on one left behind, each say so and suggest `boxmaker up`", async () => {
    const missing = join(tmp.dir, "missing.sock");
    const r = await cliAsUser(["ls"], { ...env, BOXMAKER_SOCKET: missing });
    expect(r.code).toBe(6);
    expect(r.stderr).toBe(
      `boxmaker: cannot reach loopd at ${missing} (from BOXMAKER_SOCKET): no such socket; no stack is running: start one with \`boxmaker up\` or \`systemctl start boxmaker-loopd\`, or correct BOXMAKER_SOCKET\n`,
    );
    const stale = join(tmp.dir, "stale.sock");
    writeFileSync(stale, "");
    const s = await cliAsUser(["--socket", stale, "ls"], env);
    expect(s.code).toBe(6);
    expect(s.stderr).toBe(
      `boxmaker: cannot reach loopd at ${stale} (from --socket): nobody is listening (a socket file left behind by a loopd that stopped); no stack is running: start one with \`boxmaker up\` or \`systemctl start boxmaker-loopd\`, or correct --socket\n`,
    );
  });

  it("permission denied names the socket's owner, group and mode, and suggests no `boxmaker up`", async () => {
    const sock = join(tmp.dir, "loopd.sock");
    await listen(sock);
    // Its owner's alone: the owner root is, so root too is kept out once it runs without capabilities.
    chmodSync(sock, 0o000);
    const r = await cliAsUser(["ls"], { ...env, BOXMAKER_SOCKET: sock });
    expect(r.code).toBe(6);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(
      new RegExp(
        `^boxmaker: cannot reach loopd at ${sock} \\(from BOXMAKER_SOCKET\\): permission denied \\(${sock} is \\S+:\\S+ mode 000\\); its mode lets nobody write to it;`,
      ),
    );
    expect(r.stderr).not.toContain("boxmaker up");
  });

  it.runIf(root)("permission denied by another user's socket says which group to join, or whom to run as", async () => {
    const sock = join(tmp.dir, "loopd.sock");
    await listen(sock);
    chownSync(sock, 65534, 65534);
    // The system stack's way: the socket's group may connect, others may not.
    chmodSync(sock, 0o660);
    const group = await cliAsUser(["ls"], { ...env, BOXMAKER_SOCKET: sock });
    expect(group.code).toBe(6);
    expect(group.stderr).toMatch(
      /permission denied \(\S+ is \S+:(\S+) mode 660\); join group \1 \(`sudo usermod -aG \1 \$USER`, then log in again\) or run as \S+/,
    );
    chmodSync(sock, 0o600);
    const owner = await cliAsUser(["ls"], { ...env, BOXMAKER_SOCKET: sock });
    expect(owner.stderr).toMatch(
      /permission denied \(\S+ is (\S+):\S+ mode 600\); only \1 may write to it: run as \1;/,
    );
  });
});
