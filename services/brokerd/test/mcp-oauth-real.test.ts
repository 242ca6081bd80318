// OAuth for a remote MCP server, against the MCP SDK's own OAuth-protected example server from npm
// (simpleStreamableHttp --oauth --oauth-strict: protected-resource metadata, an authorization server
// with dynamic registration and PKCE, tokens bound to the resource). brokerd discovers, registers,
// makes the page, takes the code back, keeps the tokens in its state directory and nowhere else.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { Broker } from "../src/broker.js";
import { callbackCode } from "../src/mcp/oauth-login.js";
import { finishLogin, logout, startLogin } from "../src/mcp/server-logins.js";
import { freePort, node, useMcpRig } from "./mcp-real-support.js";

const EXAMPLE = fileURLToPath(
  new URL(
    "../../../node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
    import.meta.url,
  ),
);

const m = useMcpRig();

async function startOAuthServer(children: ChildProcess[]): Promise<{ url: string; authPort: number }> {
  const [port, authPort] = [await freePort(), await freePort()];
  const c = spawn(node, [EXAMPLE, "--oauth", "--oauth-strict"], {
    env: { ...process.env, MCP_PORT: String(port), MCP_AUTH_PORT: String(authPort) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(c);
  let seen = "";
  await new Promise<void>((res, rej) => {
    const t = setTimeout(() => rej(new Error(`the OAuth example server did not start: ${seen}`)), 15_000);
    c.stdout!.on("data", (d: Buffer) => {
      seen += d.toString();
      if (/MCP Streamable HTTP Server listening/.test(seen) && /Authorization Server listening/.test(seen)) {
        clearTimeout(t);
        res();
      }
    });
  });
  return { url: `http://localhost:${port}/mcp`, authPort };
}

/** What a browser does with the page: the demo authorization server approves at once and redirects. */
async function browse(url: string): Promise<string> {
  const r = await fetch(url, { redirect: "manual" });
  const back = r.headers.get("location");
  if (r.status !== 302 || !back) throw new Error(`the authorization page answered ${r.status}`);
  return back;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

const oauthConfig = (url: string, redirectPort: number) => ({
  mcp_servers: {
    demo: {
      transport: "http",
      url,
      oauth: { redirect_port: redirectPort },
      connect_timeout_ms: 10_000,
      tools: { greet: { risk: "read" } },
    },
  },
});

describe("an OAuth-protected remote MCP server (the SDK's example server, strict resource)", () => {
  it("waits for a login; the page carries PKCE, state and the resource; the code comes back once; the tokens stay in brokerd's state dir", async () => {
    const srv = await startOAuthServer(m.children);
    const redirectPort = await freePort();
    await m.start(oauthConfig(srv.url, redirectPort));
    await m.r.broker.mcp.settled();
    expect(m.r.broker.mcp.status()).toEqual(["demo: needs login (boxmaker mcp login demo)"]);
    expect(m.r.broker.table.get("demo.greet")).toBeUndefined();

    const start = await startLogin(m.r.broker.mcp, "demo");
    expect(start.redirectUri).toBe(`http://127.0.0.1:${redirectPort}/callback`);
    const page = new URL(start.url!);
    expect(page.host).toBe(`localhost:${srv.authPort}`);
    expect(page.searchParams.get("code_challenge_method")).toBe("S256");
    expect(page.searchParams.get("code_challenge")).toMatch(/^[\w-]{43}$/);
    expect(page.searchParams.get("state")).toMatch(/^[\w-]{32}$/);
    expect(page.searchParams.get("resource")).toBe(srv.url);
    expect(page.searchParams.get("redirect_uri")).toBe(start.redirectUri);

    const back = await browse(start.url!);
    expect(back.startsWith(start.redirectUri)).toBe(true);
    // The same code with another login's state is refused and the login stays open for the right one.
    const forged = new URL(back);
    forged.searchParams.set("state", "x".repeat(32));
    await expect(finishLogin(m.r.broker.mcp, "demo", forged.href)).rejects.toThrow(/belongs to another login/);
    const status = await finishLogin(m.r.broker.mcp, "demo", back);
    expect(status).toMatch(/^demo: ready \(\d+ tools[;)]/);
    // A code is taken once: the login is over.
    await expect(finishLogin(m.r.broker.mcp, "demo", back)).rejects.toThrow(/no login .* is in progress/);

    const out = await m.viaCallTool("demo.greet", { name: "Ada" });
    expect(out.isError).toBe(false);
    expect(out.content).toContain("Hello, Ada");

    const credFile = join(m.r.config.state_dir, "mcp-oauth", "demo.json");
    const stored = JSON.parse(readFileSync(credFile, "utf8")) as { tokens: { access_token: string } };
    const token = stored.tokens.access_token;
    expect(token.length).toBeGreaterThan(16);
    expect(statSync(credFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(m.r.config.state_dir, "mcp-oauth")).mode & 0o777).toBe(0o700);
    // Nowhere else in brokerd's state (audit trail, proposals, disclosures), nor in what the model was sent.
    for (const f of filesUnder(m.r.config.state_dir).filter((f) => f !== credFile))
      expect(readFileSync(f, "latin1"), f).not.toContain(token);
    expect(out.content).not.toContain(token);
    // The state dir is a protected path: the model cannot read the tokens with its tools.
    const read = await m.r.call("read_file", { path: credFile });
    expect(read.content).not.toContain(token);
  }, 60_000);

  it("a restarted brokerd uses the stored tokens without a login, and logs nothing of them; logout forgets them", async () => {
    const srv = await startOAuthServer(m.children);
    await m.start(oauthConfig(srv.url, await freePort()));
    await m.r.broker.mcp.settled();
    const start = await startLogin(m.r.broker.mcp, "demo");
    await finishLogin(m.r.broker.mcp, "demo", await browse(start.url!));
    await m.r.broker.close();

    const logFile = join(m.r.dir, "brokerd.log");
    const log = pino({ level: "debug" }, pino.destination({ dest: logFile, sync: true }));
    const again = await Broker.open(m.r.config, { log });
    try {
      await again.mcp.settled();
      expect(again.mcp.status()[0]).toMatch(/^demo: ready \(\d+ tools[;)]/);
      const token = (
        JSON.parse(readFileSync(join(m.r.config.state_dir, "mcp-oauth", "demo.json"), "utf8")) as {
          tokens: { access_token: string };
        }
      ).tokens.access_token;
      expect(readFileSync(logFile, "utf8")).toContain("mcp server connected");
      expect(readFileSync(logFile, "utf8")).not.toContain(token);

      expect(logout(again.mcp, "demo")).toBe(true);
      expect(again.mcp.status()).toEqual(["demo: needs login (boxmaker mcp login demo)"]);
      expect(logout(again.mcp, "demo")).toBe(false);
      // The tools stay known (the tools array does not move); a call says what the person must do.
      const disclose = { sessionId: "s1", callId: "c1", name: "find_tool", argumentsJson: '{"query":"greet"}' };
      await again.call(disclose);
      const out = await again.call({
        sessionId: "s1",
        callId: "c2",
        name: "call_tool",
        argumentsJson: JSON.stringify({ name: "demo.greet", arguments: { name: "Ada" } }),
      });
      expect(out.isError).toBe(true);
      expect(out.content).toContain("until a person logs Boxmaker in to it (boxmaker mcp login demo)");
    } finally {
      await again.close();
    }
  }, 60_000);

  it("names what cannot be logged in to, and a refusal at the authorization server in its own words", async () => {
    const srv = await startOAuthServer(m.children);
    await m.start({
      mcp_servers: {
        ...oauthConfig(srv.url, await freePort()).mcp_servers,
        plain: { transport: "http", url: "http://127.0.0.1:9/mcp", connect_timeout_ms: 500 },
      },
    });
    await expect(startLogin(m.r.broker.mcp, "nope")).rejects.toThrow(
      /no MCP server "nope" in brokerd's config \(there are: demo, plain\)/,
    );
    await expect(startLogin(m.r.broker.mcp, "plain")).rejects.toThrow(/takes no OAuth login: add "oauth": \{\}/);
    const start = await startLogin(m.r.broker.mcp, "demo");
    const state = new URL(start.url!).searchParams.get("state");
    await expect(
      finishLogin(
        m.r.broker.mcp,
        "demo",
        `${start.redirectUri}?error=access_denied&error_description=the+person+said+no&state=${state}`,
      ),
    ).rejects.toThrow(/refused: access_denied \(the person said no\)/);
  }, 60_000);
});

describe("the address a person brings back", () => {
  it("gives its code only with this login's state; anything else is one clear refusal", () => {
    const state = "s".repeat(32);
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.webUrl({ withQueryParameters: true }), (junk, url) => {
        for (const input of [junk, url, `${url}&state=${encodeURIComponent(junk)}`]) {
          try {
            const { code } = callbackCode(input, state);
            // Only a bare code (no URL, no query) is taken without the state.
            expect(/^[a-z][a-z0-9+.-]*:|^\?/i.test(input)).toBe(false);
            expect(code).toBe(input);
          } catch (err) {
            expect((err as Error).name).toBe("McpLoginError");
          }
        }
      }),
      { numRuns: 500 },
    );
    expect(callbackCode(`http://127.0.0.1:1/callback?code=abc&state=${state}`, state)).toEqual({ code: "abc" });
    expect(() => callbackCode("http://127.0.0.1:1/callback?code=abc&state=other", state)).toThrow(/another login/);
    expect(() => callbackCode(`http://127.0.0.1:1/callback?state=${state}`, state)).toThrow(/carries no code/);
  });
});
