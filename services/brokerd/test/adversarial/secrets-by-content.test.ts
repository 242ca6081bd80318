// Secrets recognised by what they hold, through the real daemon: brokerd's built main.js over its gRPC
// Unix socket, commands in bwrap, fetch_url from a real HTTP server on 127.0.0.1. Generated variants of
// every rule's format × innocent file names × tools; the oracle is that no stretch of a secret comes back.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BrokerService, type ClientOf, createClient } from "@boxmaker/common";
import { nameSaysSecret } from "../../src/secrets/named-value.js";
import { defaultRules, entropy, scanSecrets } from "../../src/secrets/scan.js";
import { FakeNotifySocket } from "../../../../test/support/notify-socket.js";
import { requires } from "../../../../test/support/requirements.js";
import { tempDir } from "../../../../test/support/tmp.js";
import { bwrapPath } from "../helpers.js";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const MAIN = join(ROOT, "services/brokerd/dist/main.js");
const MCP_FIXTURE = fileURLToPath(new URL("../fixtures/mcp-stdio-server.mjs", import.meta.url));
/** Left to the allow entry test: the property must not count what the operator let through. */
const ALLOWED_RULE = "huggingface-access-token";
const RULES = defaultRules().filter((r) => r.id !== ALLOWED_RULE);

const t = tempDir("bxs-");
const ws = join(t.dir, "ws");
let proc: ChildProcess;
let notify: FakeNotifySocket;
let server: Server;
let port = 0;
const bodies = new Map<string, string>();
let client: ClientOf<typeof BrokerService>;
let n = 0;

async function call(name: string, args: unknown, session = "s1"): Promise<string> {
  const r = await client.callTool(
    { sessionId: session, callId: `c${++n}`, name, argumentsJson: JSON.stringify(args), mode: "" },
    { timeoutMs: 30_000 },
  );
  return r.content;
}

/** Each char replaced by another of its own kind (digit, hex letter, other letter, case kept); kept if the rule still matches. */
function variant(example: string, rule: (typeof RULES)[number], seed: number[]): string {
  let i = 0;
  const pick = (set: string) => set[(seed[i++ % seed.length]! + i) % set.length]!;
  const out = [...example]
    .map((c, k) => {
      if (k < 12) return c; // prefixes (ghp_, sk-ant-api03-, -----BEGIN) stay
      if (/[0-9]/.test(c)) return pick("0123456789");
      if (/[a-f]/.test(c)) return pick("abcdef");
      if (/[g-z]/.test(c)) return pick("ghijklmnopqrstuvwxyz");
      if (/[A-F]/.test(c)) return pick("ABCDEF");
      if (/[G-Z]/.test(c)) return pick("GHIJKLMNOPQRSTUVWXYZ");
      return c;
    })
    .join("");
  return scanSecrets(out, [rule]).length ? out : example;
}

/** The stretches of `text` a rule masks: what must never come back. */
function secretParts(text: string): string[] {
  return scanSecrets(text).map((f) => text.slice(f.start, f.end));
}

/** Whether any 12-character window of a secret part appears in what the model got. */
function leaks(content: string, parts: readonly string[]): boolean {
  return parts.some((p) => {
    for (let i = 0; i + 12 <= p.length; i += 6) if (content.includes(p.slice(i, i + 12))) return true;
    return p.length < 12 && content.includes(p);
  });
}

const NAMES = ["notes.txt", "secrets/api_token", "my-secret.conf", "prod-passwords.txt", "db_password.txt", "README"];
const TOOLS = ["read_file", "search_files", "cat", "cat -n", "grep -rn", "tar", "fetch_url", "mcp"] as const;

const haveTools = requires("brokerd as a process with bwrap", ["python3", "bwrap"]);

beforeAll(async () => {
  execFileSync("npx", ["tsc", "-b", "services/brokerd"], { cwd: ROOT, stdio: "inherit" });
  mkdirSync(ws);
  server = createServer((req, res) => {
    res.setHeader("content-type", "text/plain");
    res.end(bodies.get(req.url ?? "") ?? "none");
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  port = (server.address() as { port: number }).port;
  const sock = join(t.dir, "b.sock");
  const config = join(t.dir, "brokerd.json");
  writeFileSync(
    config,
    JSON.stringify({
      socket: sock,
      state_dir: join(t.dir, "state"),
      workspace_roots: [ws],
      log_level: "warn",
      sandbox: { bwrap_path: bwrapPath },
      fetch_url: { allow_private_hosts: ["127.0.0.1"] },
      policy: {
        rules: [
          { tool: "run_command", effect: "allow" },
          { tool: "fetch_url", effect: "allow", hosts: ["127.0.0.1"] },
        ],
      },
      secrets: { allow: [{ rule: ALLOWED_RULE }, { path: "fixtures/**" }] },
      // An MCP server whose tool returns what it is given: a result holding a secret, as a server's would.
      mcp_servers: {
        fx: {
          transport: "stdio",
          command: process.execPath,
          args: [MCP_FIXTURE],
          risk: "read",
          path_args: [],
          sandbox: false,
        },
      },
    }),
  );
  notify = new FakeNotifySocket(join(t.dir, "notify.sock"));
  await notify.start();
  proc = spawn(process.execPath, [MAIN, "--config", config], {
    env: { ...process.env, NOTIFY_SOCKET: notify.path },
    stdio: ["ignore", "ignore", "inherit"],
  });
  await notify.waitFor("READY=1");
  client = createClient(BrokerService, sock);
  await call("find_tool", { query: "fetch a web page url" });
  // The server connects in the background: its tool is found once it is up.
  while (!(await call("find_tool", { query: "echo the given text" })).includes("fx.echo"))
    await new Promise((ok) => setTimeout(ok, 50));
}, 60_000);

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    proc.kill("SIGTERM");
    await once(proc, "exit");
  }
  await notify?.stop();
  server?.close();
  t.cleanup();
});

describe.skipIf(!haveTools)("secrets by content, through the real daemon", () => {
  it("sends the model 0 bytes of any recognised secret: formats × innocent names × read_file, search_files, cat, cat -n, grep -rn, tar, fetch_url, an MCP tool", async () => {
    let inputs = 0;
    let leaked = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...RULES),
        fc.nat({ max: 9 }),
        fc.array(fc.nat({ max: 1000 }), { minLength: 4, maxLength: 8 }),
        fc.constantFrom(...NAMES),
        fc.constantFrom(...TOOLS),
        async (rule, which, seed, name, tool) => {
          const example = rule.examples[which % rule.examples.length]!;
          const secret = variant(example, rule, seed);
          const text = `# settings\nhost = example.org\n${secret}\nretries = 3\n`;
          const parts = secretParts(text);
          expect(parts.length).toBeGreaterThan(0);
          const dir = `r${++inputs}`;
          const rel = `${dir}/${name}`;
          mkdirSync(join(ws, rel, ".."), { recursive: true });
          writeFileSync(join(ws, rel), text);
          let got: string;
          if (tool === "read_file") got = await call("read_file", { path: rel });
          else if (tool === "search_files") got = await call("search_files", { pattern: ".", path: dir });
          else if (tool === "cat" || tool === "cat -n")
            got = await call("run_command", { command: `${tool} '${rel}'` });
          else if (tool === "grep -rn") got = await call("run_command", { command: `grep -rn . '${dir}'` });
          else if (tool === "tar")
            got = await call("run_command", { command: `tar cf /tmp/a.tar '${rel}' && tar xOf /tmp/a.tar` });
          else if (tool === "mcp") got = await call("call_tool", { name: "fx.echo", arguments: { text } });
          else {
            bodies.set(`/b/${inputs}`, text);
            got = await call("call_tool", {
              name: "fetch_url",
              arguments: { url: `http://127.0.0.1:${port}/b/${inputs}` },
            });
          }
          const command = tool !== "read_file" && tool !== "search_files" && tool !== "fetch_url" && tool !== "mcp";
          if (command && nameSaysSecret(name)) {
            // Named like a secret and holding one: the sandbox masks the whole file, as a named secret.
            expect(got).not.toContain("example.org");
          } else {
            // The call did run and returned the file's other lines: the secret was masked, not the call refused.
            expect(got).toContain("example.org");
            expect(got).toContain("[secret masked: ");
          }
          if (leaks(got, parts)) leaked++;
          expect(leaks(got, parts)).toBe(false);
          if (tool === "read_file" || tool === "search_files") {
            // Remembered by identity: the next read is refused like a named secret…
            const again = await call("read_file", { path: rel });
            expect(again).toContain("secret file under another name");
            // …and a command finds it masked as a named secret is (/dev/null, not readable), so no re-encoding
            // brings it back.
            const encoded = await call("run_command", { command: `base64 -w0 '${rel}'` });
            expect(encoded).toContain("Permission denied");
            expect(encoded).not.toContain(Buffer.from(text).toString("base64").slice(0, 16));
          }
        },
      ),
      { numRuns: 150 },
    );
    expect(leaked).toBe(0);
  }, 240_000);

  it("a file named like a secret holding one bare value: 0 bytes of it through read_file, search_files, cat, tar, grep", async () => {
    const HINTED = ["secrets/db_password.txt", "secrets/api_token", "prod-passwords.txt", "my-secret.conf", "gh.token"];
    let k = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.stringMatching(/^[A-Za-z0-9+/_=!@%^*-]{12,64}$/).filter((v) => entropy(v) >= 3.2),
        fc.constantFrom(...HINTED),
        fc.constantFrom("read_file", "search_files", "cat", "tar", "grep"),
        fc.boolean(),
        async (value, name, tool, trailingNewline) => {
          const dir = `bare${++k}`;
          const rel = `${dir}/${name}`;
          mkdirSync(join(ws, rel, ".."), { recursive: true });
          writeFileSync(join(ws, rel), trailingNewline ? `${value}\n` : value);
          let got: string;
          if (tool === "read_file") got = await call("read_file", { path: rel });
          else if (tool === "search_files") got = await call("search_files", { pattern: ".", path: dir });
          else if (tool === "cat") got = await call("run_command", { command: `cat '${rel}'` });
          else if (tool === "tar")
            got = await call("run_command", { command: `tar cf /tmp/b.tar '${rel}'; tar xOf /tmp/b.tar` });
          else got = await call("run_command", { command: `grep -r . '${dir}'` });
          expect(got).not.toContain(value);
        },
      ),
      { numRuns: 60 },
    );
  }, 240_000);

  it("leaves a bare value alone in a file whose name says nothing (no false positive from content alone)", async () => {
    mkdirSync(join(ws, "plain"), { recursive: true });
    writeFileSync(join(ws, "plain", "notes.txt"), "Zq8xK2mP9wLr4TbN\n");
    expect(await call("read_file", { path: "plain/notes.txt" })).toContain("Zq8xK2mP9wLr4TbN");
    expect(await call("run_command", { command: "cat plain/notes.txt" })).toContain("Zq8xK2mP9wLr4TbN");
  }, 60_000);

  it("lets an allow entry through: a rule the operator turned off, and files under an allowed path", async () => {
    const hf = defaultRules().find((r) => r.id === ALLOWED_RULE)!.examples[0]!;
    const gh = RULES.find((r) => r.id === "github-pat")!.examples[0]!;
    mkdirSync(join(ws, "fixtures"), { recursive: true });
    writeFileSync(join(ws, "hf.txt"), `token ${hf}\n`);
    writeFileSync(join(ws, "fixtures", "gh.txt"), `token ${gh}\n`);
    writeFileSync(join(ws, "gh.txt"), `token ${gh}\n`);
    expect(await call("read_file", { path: "hf.txt" })).toContain(hf);
    expect(await call("read_file", { path: "fixtures/gh.txt" })).toContain(gh);
    // The allow names a path: the same token elsewhere, or in a command's output, is masked.
    expect(await call("read_file", { path: "gh.txt" })).not.toContain(gh);
    expect(await call("run_command", { command: "cat fixtures/gh.txt" })).not.toContain(gh);
  }, 60_000);

  it("does not refuse an unrelated new file that reuses a deleted secret's inode", async () => {
    const d = join(ws, "reuse");
    mkdirSync(d);
    let reused: string | undefined;
    // Another process (a parallel test) can take the freed inode first: then the whole
    // round is tried again, with a new secret, until this process gets an inode back.
    for (let round = 0; round < 20 && !reused; round++) {
      writeFileSync(join(d, ".env"), "X=1\n");
      const old = statSync(join(d, ".env")).ino;
      // A command's walk records the named secret's identity.
      await call("run_command", { command: "true" });
      unlinkSync(join(d, ".env"));
      for (let i = 0; i < 2000 && !reused; i++) {
        const p = join(d, `notes-${round}-${i}.txt`);
        writeFileSync(p, "meeting at ten\n");
        if (statSync(p).ino === old) reused = p;
        else rmSync(p);
      }
    }
    expect(reused, "the filesystem gave the inode back").toBeDefined();
    expect(await call("read_file", { path: `reuse/${reused!.split("/").pop()}` })).toContain("meeting at ten");
    // A renamed secret keeps its identity (and birth time): still refused under its new name.
    writeFileSync(join(d, ".env"), "Y=2\n");
    await call("run_command", { command: "true" });
    renameSync(join(d, ".env"), join(d, "plain.txt"));
    expect(await call("read_file", { path: "reuse/plain.txt" })).toContain("secret file under another name");
  }, 60_000);
});
