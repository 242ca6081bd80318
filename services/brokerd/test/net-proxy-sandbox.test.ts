import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ToolDecision } from "@boxmaker/common";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { rig, type Rig } from "./helpers.js";
import { requires, toolPath } from "../../../test/support/requirements.js";

/**
 * Real commands in bwrap, real socat, a real HTTP server on the host's 127.0.0.1: the
 * command's namespace has no route anywhere, so the only way out is the proxy.
 */
let server: Server;
let port: number;
let served = 0;
beforeAll(async () => {
  server = createServer((req, res) => {
    served++;
    res.end(`hello from ${req.headers.host}\n`);
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

let r: Rig;
afterEach(async () => r && (await r.cleanup()));

const proxied = (net: Record<string, unknown>) => ({
  sandbox: { net_proxy: { enabled: true, socat_path: toolPath("socat") ?? "/nonexistent/socat", ...net } },
  policy: {
    rules: [
      { name: "cmds", tool: "run_command", effect: "allow" },
      { name: "local-test-host", tool: "run_command", effect: "allow", hosts: ["allowed.test"] },
      { name: "no-evil", tool: "run_command", effect: "deny", hosts: ["evil.test"] },
    ],
  },
});

const mapped = { "allowed.test": "127.0.0.1", "other.test": "127.0.0.1", "evil.test": "127.0.0.1" };

const auditLines = (rr: Rig) =>
  readFileSync(join(rr.dir, "state", "audit.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { kind: string; decision: string; rule: string; connection?: Record<string, unknown> })
    .filter((l) => l.kind === "connection");

describe.skipIf(!requires("run_command's network through the allowlist proxy", ["bwrap", "socat", "curl"]))(
  "run_command through the network proxy",
  () => {
    it("lets curl reach an allowed host and refuses every other, over HTTP, CONNECT and SOCKS5", async () => {
      r = await rig(proxied({ addresses: mapped, allow_private_hosts: ["allowed.test", "other.test", "evil.test"] }));
      expect(r.broker.sandbox.detail).toContain("allowlist proxy");
      const before = served;
      const res = await r.call("run_command", {
        command:
          `curl -sS http://allowed.test:${port}/a; ` +
          `curl -sS -p http://allowed.test:${port}/b; ` +
          `curl -sS --proxy socks5h://127.0.0.1:3128 http://ALLOWED.test.:${port}/c; ` +
          `curl -sS http://other.test:${port}/; ` +
          `curl -sS -p http://evil.test:${port}/ 2>&1; ` +
          `curl -sS --noproxy '*' http://127.0.0.1:${port}/ 2>&1; echo end`,
      });
      expect(res.decision).toBe(ToolDecision.ALLOWED);
      const out = res.content;
      // Three requests reached the server, each with the Host the client named.
      expect(out.match(new RegExp(`hello from allowed\\.test\\.?:${port}`, "gi"))?.length).toBe(3);
      expect(served - before).toBe(3);
      expect(out).toMatch(/boxmaker proxy: refused \(net:no-rule\): other\.test:\d+ is not allowed for this command/);
      expect(out).toMatch(/CONNECT tunnel failed, response 403/);
      // Without the proxy there is no network at all: the namespace has only lo.
      expect(out).toMatch(/Failed to connect to 127\.0\.0\.1|Couldn't connect/);
      expect(out).toMatch(/\[network: allowed\.test:\d+ \d+ bytes up, \d+ down\]/);
      expect(out).toMatch(/\[network: evil\.test:\d+ refused \(no-evil\)/);
      const lines = auditLines(r);
      expect(lines.map((l) => [l.decision, l.rule, l.connection?.host])).toEqual(
        expect.arrayContaining([
          ["allowed", "local-test-host", "allowed.test"],
          ["denied", "net:no-rule", "other.test"],
          ["denied", "no-evil", "evil.test"],
        ]),
      );
      for (const l of lines.filter((x) => x.decision === "allowed")) {
        expect(l.connection!.bytes_down as number).toBeGreaterThan(0);
        expect(l.connection!.address).toBe("127.0.0.1");
      }
    });

    it("refuses an allowed host that maps to 127.0.0.1 unless the operator lifted the private-address refusal", async () => {
      r = await rig(proxied({ addresses: mapped }));
      const before = served;
      const res = await r.call("run_command", { command: `curl -sS http://allowed.test:${port}/; echo end` });
      expect(res.content).toMatch(
        /boxmaker proxy: refused \(net:private\): allowed\.test resolves to 127\.0\.0\.1, a private, loopback or link-local address/,
      );
      expect(res.content).toMatch(/\[network: allowed\.test:\d+ refused \(net:private\)/);
      expect(served).toBe(before);
    });

    it("says so at start when socat is missing, and commands then have no network at all", async () => {
      r = await rig({
        ...proxied({ addresses: mapped, allow_private_hosts: ["allowed.test"] }),
        sandbox: { net_proxy: { enabled: true, socat_path: "/nonexistent/socat" } },
      });
      expect(r.broker.status().sandbox).toContain("sandbox.net_proxy is on but /nonexistent/socat does not exist");
      const before = served;
      const res = await r.call("run_command", {
        command: `env | grep -ci proxy; curl -sS http://allowed.test:${port}/ 2>&1; true`,
      });
      expect(res.content).toMatch(/^0$/m);
      expect(res.content).toMatch(/Could not resolve host: allowed\.test/);
      expect(served).toBe(before);
    });

    it("is off by default: a command has no network and no proxy variables", async () => {
      r = await rig({ policy: { rules: [{ name: "cmds", tool: "run_command", effect: "allow" }] } });
      const res = await r.call("run_command", { command: "env | grep -ci proxy; ls /run/boxmaker-net 2>&1; true" });
      expect(res.content).toMatch(/^0$/m);
      expect(res.content).toMatch(/No such file or directory/);
    });
  },
);
