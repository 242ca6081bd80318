import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

/**
 * `boxmaker mcp login` through a real terminal against the MCP SDK's own
 * OAuth-protected example server from npm: the page is shown whole (folded,
 * never cut) with its host, the browser comes back to the CLI's loopback
 * listener, or the person pastes the address it ended on; the server is then
 * ready through the whole stack.
 */

const EXAMPLE = join(
  fileURLToPath(new URL("../../../node_modules/@modelcontextprotocol/", import.meta.url)),
  "sdk/dist/esm/examples/server/simpleStreamableHttp.js",
);

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((res) => s.listen(0, "127.0.0.1", () => res()));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((res) => s.close(() => res()));
  return port;
}

const [mcpPort, authPort, redirectPort] = [await freePort(), await freePort(), await freePort()];
let server: ChildProcess | undefined;

/** The page a screen shows between "Open this page" and its host line, joined back from its folded rows. */
function pageOn(screen: string): string {
  const lines = screen.split("\n");
  const from = lines.findIndex((l) => l.includes("Open this page in your browser:"));
  const to = lines.findIndex((l, i) => i > from && l.includes("host: "));
  return lines
    .slice(from + 1, to)
    .map((l) => l.replace(/^│ /, "").replace(/^↪ /, "").trimEnd())
    .join("");
}

/** What a browser does with the page: the demo authorization server approves at once and redirects. */
async function browse(url: string): Promise<string> {
  const r = await fetch(url, { redirect: "manual" });
  const back = r.headers.get("location");
  if (r.status !== 302 || !back) throw new Error(`the authorization page answered ${r.status}`);
  return back;
}

describe.skipIf(!requires("MCP OAuth login on a terminal (pty tests)", ["tmux"]))(
  "boxmaker mcp login, on a terminal",
  () => {
    beforeAll(async () => {
      server = spawn(process.execPath, [EXAMPLE, "--oauth", "--oauth-strict"], {
        env: { ...process.env, MCP_PORT: String(mcpPort), MCP_AUTH_PORT: String(authPort) },
        stdio: ["ignore", "pipe", "ignore"],
      });
      let seen = "";
      await new Promise<void>((res, rej) => {
        const t = setTimeout(() => rej(new Error(`the OAuth example server did not start: ${seen}`)), 15_000);
        server!.stdout!.on("data", (d: Buffer) => {
          seen += d.toString();
          if (/MCP Streamable HTTP Server listening/.test(seen) && /Authorization Server listening/.test(seen)) {
            clearTimeout(t);
            res();
          }
        });
      });
    });
    afterAll(() => server?.kill("SIGKILL"));

    const c = useChatTty("bxo-", {
      brokerd: {
        mcp_servers: {
          demo: {
            transport: "http",
            url: `http://localhost:${mcpPort}/mcp`,
            oauth: { redirect_port: redirectPort },
            connect_timeout_ms: 10_000,
          },
        },
        mcp_reconnect: { initial_ms: 200, max_ms: 1000 },
      },
    });
    const t = c.t;

    async function statusOf(): Promise<string> {
      const out = await t.stack.cli(["status", "--json"]);
      return (JSON.parse(out.stdout) as { broker?: { mcp_servers?: string[] } }).broker?.mcp_servers?.[0] ?? "";
    }

    async function waitForStatus(pred: (s: string) => boolean, what: string): Promise<string> {
      let s = "";
      for (let i = 0; i < 100 && !pred(s); i++) {
        s = await statusOf();
        if (!pred(s)) await new Promise((r) => setTimeout(r, 200));
      }
      expect(s, what).toSatisfy(pred);
      return s;
    }

    it("at 40 columns: the page folded whole with its host, the browser comes back to the CLI, and the server is ready", async () => {
      expect(await waitForStatus((s) => s.includes("needs login"), "waiting for a login")).toBe(
        "demo: needs login (boxmaker mcp login demo)",
      );
      const tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["mcp", "login", "demo"], c.env()), { columns: 40, rows: 40 });
      const screen = await tmux.waitFor(pane, (s) => s.includes("Waiting for the browser"), "the login page");
      expect(screen).toContain('Log Boxmaker in to MCP server "demo"');
      expect(screen).toContain(`host: localhost:${authPort}`);
      expect(screen.replace(/\n│ /g, " ")).toContain("kept by brokerd, never shown to the model");
      for (const line of screen.split("\n")) expect(line.length).toBeLessThanOrEqual(40);
      const page = pageOn(screen);
      expect(new URL(page).searchParams.get("code_challenge_method")).toBe("S256");
      const back = await browse(page);
      expect(back.startsWith(`http://127.0.0.1:${redirectPort}/callback?`)).toBe(true);
      const tab = await fetch(back);
      expect(await tab.text()).toContain("You can close this tab");
      const done = await tmux.waitFor(pane, (s) => s.includes("[exit "), "the login to end", 30_000);
      expect(done).toMatch(/logged in: demo: ready \(\d+/);
      expect(done).toContain("[exit 0]");
      expect(await statusOf()).toMatch(/^demo: ready \(\d+ tools/);
    }, 90_000);

    it("with the loopback port taken, a mistyped paste is asked again and the pasted address logs in; logout forgets it", async () => {
      await waitForStatus((s) => s.includes("ready") || s.includes("needs login"), "connected or waiting");
      const out = await t.stack.cli(["mcp", "logout", "demo"]);
      expect(out.stdout).toMatch(/logged out of MCP server "demo"|had no stored login/);
      await waitForStatus((s) => s.includes("needs login"), "waiting for a login after logout");

      // Another program holds the redirect port: the CLI says so and takes a paste instead.
      const squatter: Server = createServer(() => {});
      await new Promise<void>((res) => squatter.listen(redirectPort, "127.0.0.1", () => res()));
      try {
        const tmux = c.newTmux();
        const pane = await tmux.start(Tmux.cliLine(["mcp", "login", "demo"], c.env()), { columns: 200, rows: 40 });
        const screen = await tmux.waitFor(
          pane,
          (s) => s.includes("the address the browser ended on"),
          "the paste line",
        );
        expect(screen).toContain(`cannot wait for the browser at http://127.0.0.1:${redirectPort}/callback`);
        expect(screen).toContain("EADDRINUSE");
        await tmux.type(pane, "not a code at all");
        await tmux.keys(pane, "Enter");
        await tmux.waitFor(
          pane,
          (s) => s.includes("neither the address the browser ended on nor a code"),
          "the mistyped paste refused",
        );
        const back = await browse(pageOn(screen));
        await tmux.type(pane, back);
        await tmux.keys(pane, "Enter");
        const done = await tmux.waitFor(pane, (s) => s.includes("[exit "), "the login to end", 30_000);
        expect(done).toMatch(/logged in: demo: ready \(\d+/);
        expect(done).toContain("[exit 0]");
      } finally {
        squatter.close();
      }
      expect(await statusOf()).toMatch(/^demo: ready \(\d+ tools/);
    }, 90_000);

    it("Ctrl-C at the paste line ends the login (exit 5) and a new one starts afresh", async () => {
      const tmux = c.newTmux();
      const pane = await tmux.start(Tmux.cliLine(["mcp", "login", "demo"], c.env()), { columns: 120, rows: 40 });
      await tmux.waitFor(pane, (s) => s.includes("the address the browser ended on"), "the paste line");
      await tmux.keys(pane, "C-c");
      const done = await tmux.waitFor(pane, (s) => s.includes("[exit "), "the login to end");
      expect(done).toContain('the login to MCP server "demo" was not finished: dismissed');
      expect(done).toContain("[exit 5]");
      const wrong = await t.stack.cli(["mcp", "login", "nope"]);
      expect(wrong.stderr).toContain('no MCP server "nope" in brokerd\'s config (there are: demo)');
      expect(wrong.code).toBe(1);
    }, 60_000);
  },
);
