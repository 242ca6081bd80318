import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { requires, toolPath } from "../../../test/support/requirements.js";
import { useStack } from "../../../test/support/use-stack.js";
import { Tmux } from "./support/tmux.js";

/**
 * ask for a command's network as a person meets it in `boxmaker chat` on a real
 * terminal: the model's curl to a host an ask rule names is refused with the proposal's
 * id, the person approves it in place when the turn ends, and the model's re-run in the
 * next turn gets the body.
 */
const needs = requires("run_command's network ask through the allowlist proxy, in chat (pty)", [
  "tmux",
  "bwrap",
  "socat",
  "curl",
]);

let web: Server;
let port = 0;
let served = 0;
beforeAll(async () => {
  web = createServer((req, res) => {
    served++;
    res.end(`served ${req.url} to the sandbox\n`);
  });
  await new Promise<void>((ok) => web.listen(0, "127.0.0.1", ok));
  port = (web.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((ok) => web.close(() => ok())));

describe.skipIf(!needs)("boxmaker chat: a host a command's network asks for", () => {
  const t = useStack("bxnq-", {
    brokerd: {
      sandbox: {
        mode: "bwrap",
        bwrap_path: toolPath("bwrap") ?? "/nonexistent/bwrap",
        net_proxy: {
          enabled: true,
          socat_path: toolPath("socat") ?? "/nonexistent/socat",
          addresses: { "ask.test": "127.0.0.1" },
          allow_private_hosts: ["ask.test"],
        },
      },
      policy: {
        rules: [
          { name: "commands", tool: "run_command", effect: "allow" },
          { name: "ask-test", tool: "run_command", effect: "ask", hosts: ["ask.test"] },
        ],
      },
    },
  });
  let tmux: Tmux | undefined;
  afterEach(async () => {
    await tmux?.kill();
    tmux = undefined;
  });

  it("refuses the first curl naming the proposal, asks when the turn ends, and the re-run after approval gets the body", async () => {
    const command = `curl -sS http://ask.test:${port}/pkg`;
    const call = (id: string) => ({
      toolCalls: [{ id, name: "run_command", arguments: JSON.stringify({ command }) }],
    });
    t.stack.sim.enqueue(call("call-ask1"));
    t.stack.sim.enqueue({ content: "ask.test needs your approval; I will fetch it again once you allow it." });
    t.stack.sim.enqueue(call("call-ask2"));
    t.stack.sim.enqueue({ content: "Fetched the package index." });
    tmux = new Tmux();
    const env = {
      BOXMAKER_SOCKET: t.stack.sockets.loopd,
      BOXMAKER_CHAT_HISTORY: join(t.dir, "chat_history"),
      BOXMAKER_NOTIFY: "off",
      NO_COLOR: "1",
      FORCE_COLOR: undefined,
      TERM: "xterm-256color",
    };
    const chat = await tmux.start(Tmux.cliLine(["chat"], env));
    await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
    const before = served;
    await tmux.type(chat, "fetch the package index");
    const asked = await tmux.waitFor(chat, (s) => s.includes("approve? [y]es"), "the question after the turn", 60_000);
    const id = /proposal (p-[0-9a-z]+-[0-9a-f]+) was staged/.exec(asked)?.[1];
    expect(id).toBeDefined();
    expect(asked).toContain(
      `│ boxmaker proxy: refused (ask-test): ask.test:${port} needs a person's approval: proposal ${id}`,
    );
    expect(asked).toMatch(/— stop · 2 requests/);
    // The question comes after the turn's answer, not written over it.
    expect(asked.indexOf("I will fetch it again")).toBeLessThan(asked.indexOf("approve? [y]es"));
    expect(asked).toContain(`proposal ${id} pending`);
    expect(asked).toContain(`network: ask.test:${port} for \`${command}\``);
    expect(served).toBe(before);
    await tmux.keys(chat, "y");
    const approved = await tmux.waitFor(chat, (s) => s.includes("applied: "), "the decision's line");
    expect(approved).toContain(`applied: ask.test:${port} is allowed for this session's commands from now on`);
    await tmux.type(chat, "try again");
    const done = await tmux.waitFor(chat, (s) => s.includes("Fetched the package index."), "the second turn", 60_000);
    expect(done).toContain("│ served /pkg to the sandbox");
    expect(served).toBe(before + 1);
    // The model learnt of the approval with the message that asked it to retry.
    const msgs = (t.stack.sim.completions.at(-2)!.body as { messages: { role: string; content: string }[] }).messages;
    expect(JSON.stringify(msgs)).toContain(`network (proposal ${id}) was approved and applied after your turn ended`);
    const audit = readFileSync(join(t.dir, "state", "broker", "audit.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { kind: string; decision: string; rule: string; proposal?: string })
      .filter((l) => l.kind === "connection" || l.kind === "proposal");
    expect(audit.map((l) => [l.kind, l.decision, l.rule, l.proposal])).toEqual([
      ["connection", "staged", "ask-test", id],
      ["proposal", "approved", "ask-test", id],
      ["connection", "allowed", `grant:${id}`, id],
    ]);
    await tmux.keys(chat, "C-d");
    expect(await tmux.waitFor(chat, (s) => /^\[exit \d+\]$/m.test(s), "chat to exit")).toMatch(/^\[exit 0\]$/m);
  });
});
