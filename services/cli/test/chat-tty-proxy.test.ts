import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { useStack } from "../../../test/support/use-stack.js";
import { requires, toolPath } from "../../../test/support/requirements.js";
import { Tmux } from "./support/tmux.js";

/**
 * The network proxy as a person meets it: in `boxmaker chat` on a real terminal, the
 * model's run_command fetches from a host the operator allowed (a server on the host's
 * 127.0.0.1, reached only through the proxy) and is refused another.
 */
const needs = requires("run_command's network through the allowlist proxy, in chat (pty)", [
  "tmux",
  "bwrap",
  "socat",
  "curl",
]);

let web: Server;
let port = 0;
beforeAll(async () => {
  web = createServer((req, res) => res.end(`served ${req.url} to the sandbox\n`));
  await new Promise<void>((ok) => web.listen(0, "127.0.0.1", ok));
  port = (web.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((ok) => web.close(() => ok())));

describe.skipIf(!needs)("boxmaker chat: a command's network through the proxy", () => {
  const t = useStack("bxnp-", {
    brokerd: {
      sandbox: {
        mode: "bwrap",
        bwrap_path: toolPath("bwrap") ?? "/nonexistent/bwrap",
        net_proxy: {
          enabled: true,
          socat_path: toolPath("socat") ?? "/nonexistent/socat",
          // Both names are this test's 127.0.0.1; only the operator's explicit word lets a command reach it.
          addresses: { "allowed.test": "127.0.0.1", "other.test": "127.0.0.1" },
          allow_private_hosts: ["allowed.test", "other.test"],
        },
      },
      policy: {
        rules: [
          { name: "commands", tool: "run_command", effect: "allow" },
          { name: "test-server", tool: "run_command", effect: "allow", hosts: ["allowed.test"] },
        ],
      },
    },
  });
  let tmux: Tmux | undefined;
  afterEach(async () => {
    await tmux?.kill();
    tmux = undefined;
  });

  it("lets curl reach the allowed host, refuses the other, and the command and the audit trail both say so", async () => {
    const command = `curl -sS http://allowed.test:${port}/pkg; curl -sS https://other.test:${port}/ 2>&1; curl -sS http://other.test:${port}/`;
    t.stack.sim.enqueue({
      toolCalls: [{ id: "call-net1", name: "run_command", arguments: JSON.stringify({ command }) }],
    });
    t.stack.sim.enqueue({ content: "Fetched the package index; other.test is not allowed." });
    tmux = new Tmux();
    const env = {
      BOXMAKER_SOCKET: t.stack.sockets.loopd,
      BOXMAKER_CHAT_HISTORY: join(t.dir, "chat_history"),
      NO_COLOR: undefined,
      FORCE_COLOR: undefined,
      TERM: "xterm-256color",
    };
    const chat = await tmux.start(Tmux.cliLine(["chat"], env));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    await tmux.type(chat, "fetch the package index");
    const done = await tmux.waitFor(chat, (s) => /— stop · 2 requests/.test(s), "the turn to end", 60_000);
    expect(done).toContain("┌ run_command");
    expect(done).toContain("│ served /pkg to the sandbox");
    expect(done).toMatch(/│ curl: \(56\) CONNECT tunnel failed, response 403/);
    expect(done).toMatch(/│ boxmaker proxy: refused \(net:no-rule\): other\.test:\d+ is not allowed for this command/);
    expect(done).toMatch(/│ \[network: allowed\.test:\d+ \d+ bytes up, \d+ down\]/);
    expect(done).toContain("Fetched the package index; other.test is not allowed.");
    // What the model was given is what the pane showed.
    const msgs = (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages;
    const result = msgs.find((m) => m.role === "tool")!.content;
    expect(result).toContain("served /pkg to the sandbox");
    expect(result).toMatch(/\[network: other\.test:\d+ refused \(net:no-rule\)/);
    const audit = readFileSync(join(t.dir, "state", "broker", "audit.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map(
        (l) => JSON.parse(l) as { kind: string; decision: string; connection?: { host: string; bytes_down: number } },
      )
      .filter((l) => l.kind === "connection");
    expect(audit.map((l) => [l.decision, l.connection?.host])).toEqual([
      ["allowed", "allowed.test"],
      ["denied", "other.test"],
      ["denied", "other.test"],
    ]);
    expect(audit[0]!.connection!.bytes_down).toBeGreaterThan(0);
    await tmux.keys(chat, "C-d");
    expect(await tmux.waitFor(chat, (s) => s.includes("[exit "), "chat to exit")).toContain("[exit 0]");
  });
});
