import { Status } from "@boxmaker/common";
import type { McpConnection } from "./connection.js";
import type { McpServers } from "./mcp-servers.js";
import { McpLoginError } from "./login-error.js";
import type { OAuthLogin } from "./oauth-login.js";

/*
 * `boxmaker mcp login / logout` as brokerd serves them: which server, whether
 * it takes a login, and the connection brought up once the tokens are in.
 */

function loginOf(servers: McpServers, name: string): { conn: McpConnection; login: OAuthLogin } {
  const conn = servers.get(name);
  if (!conn) {
    const names = servers.connections.map((c) => c.name);
    throw new McpLoginError(
      `no MCP server "${name}" in brokerd's config${names.length ? ` (there are: ${names.join(", ")})` : ""}`,
      Status.NOT_FOUND,
    );
  }
  if (!conn.login)
    throw new McpLoginError(
      conn.config.transport === "http"
        ? `MCP server "${name}" takes no OAuth login: add "oauth": {} to its entry in brokerd's config`
        : `MCP server "${name}" runs on this machine (stdio): there is nothing to log in to`,
    );
  return { conn, login: conn.login };
}

/** The page to open and where the browser comes back; no page when a stored refresh token was enough. */
export async function startLogin(
  servers: McpServers,
  name: string,
): Promise<{ url: string | undefined; redirectUri: string; status: string }> {
  const { conn, login } = loginOf(servers, name);
  const url = await login.start();
  if (!url) await conn.loggedIn();
  return { url, redirectUri: login.redirectUrl, status: conn.statusLine() };
}

/** Exchanges the code the browser brought back, then connects: the server's status line after it. */
export async function finishLogin(servers: McpServers, name: string, callback: string): Promise<string> {
  const { conn, login } = loginOf(servers, name);
  await login.finish(callback);
  await conn.loggedIn();
  return conn.statusLine();
}

export function logout(servers: McpServers, name: string): boolean {
  const { conn, login } = loginOf(servers, name);
  const removed = login.forget();
  conn.loggedOut();
  return removed;
}
