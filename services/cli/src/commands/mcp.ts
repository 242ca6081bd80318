import type { Command } from "commander";
import { withClient } from "../connection.js";
import type { GlobalOptions } from "../global-options.js";
import { ExitCode } from "../exit-codes.js";
import { output } from "../output.js";
import { styleFor } from "../render/style.js";
import { printErr } from "../render/terminal-safe.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  const mcp = program
    .command("mcp")
    .description("log Boxmaker in to OAuth-protected remote MCP servers, or out again")
    .addHelpText(
      "after",
      `
A remote (http) MCP server whose entry in brokerd's config has "oauth": {}
waits for a person to log in ("needs login" in \`boxmaker status\`).
\`login\` shows the authorization page to open in your browser; the browser is
sent back to a loopback address this command listens on, or you paste the
address it ended on. brokerd keeps the tokens in its state directory (never
in the config, the logs or the model's view) and refreshes them. See
docs/operations.md, "OAuth-protected MCP servers".

Examples:
  boxmaker mcp login linear
  boxmaker mcp logout linear`,
    );

  mcp
    .command("login")
    .description("log in to an OAuth-protected MCP server: open the page shown, then come back")
    .argument("<server>", "the server's name in brokerd's mcp_servers")
    .option("--json", 'print {"server", "status"} as one JSON object (the page and questions go to stderr)')
    .action((server: string, opts: { json?: boolean }) =>
      withClient(globals(), async (client) => {
        const { mcpLogin, LoginAbandoned } = await import("../mcp-login.js");
        let status: string;
        try {
          status = await mcpLogin(client, server, {
            input: process.stdin,
            err: process.stderr,
            style: styleFor(process.stderr),
          });
        } catch (err) {
          if (!(err instanceof LoginAbandoned)) throw err;
          printErr(`boxmaker: the login to MCP server "${server}" was not finished: ${err.message}\n`);
          process.exitCode = ExitCode.interrupted;
          return;
        }
        await output(opts, {
          json: () => ({ value: { server, status } }),
          text: () => `logged in: ${status}\n`,
        });
      }),
    );

  mcp
    .command("logout")
    .description("forget the tokens and client registration Boxmaker holds for an MCP server")
    .argument("<server>", "the server's name in brokerd's mcp_servers")
    .option("--json", 'print {"server", "removed"} as one JSON object')
    .action((server: string, opts: { json?: boolean }) =>
      withClient(globals(), async (client) => {
        const { removed } = await client.mcpLogout({ server });
        await output(opts, {
          json: () => ({ value: { server, removed } }),
          text: () =>
            removed
              ? `logged out of MCP server "${server}": its tokens are deleted\n`
              : `MCP server "${server}" had no stored login\n`,
        });
      }),
    );
}
