import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { auth, type OAuthClientProvider, type OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { Status, messageOf } from "@boxmaker/common";
import { McpLoginError } from "./login-error.js";
import type { McpServerConfig } from "../config-types.js";
import type { CredentialFile } from "./oauth-credentials.js";

/** How long the page of one login may be open before its code is no longer taken. */
const LOGIN_WINDOW_MS = 10 * 60_000;

/** The `oauth` block of one HTTP server's config. */
type OAuthSettings = NonNullable<McpServerConfig["oauth"]>;

interface Pending {
  verifier: string;
  state: string;
  until: number;
}

/**
 * The SDK's OAuth client pieces (discovery by protected-resource metadata,
 * dynamic registration, PKCE, refresh) with brokerd's answers: credentials in
 * one file of the state directory, and a login only when a person asked for
 * one. A connect that finds no usable token does not start a login of its
 * own (its verifier and state are thrown away): otherwise a background
 * reconnect would replace the verifier of the page the person has open.
 */
export class OAuthLogin implements OAuthClientProvider {
  /** Set while start() runs: what the SDK makes for the page goes here. */
  private capture: { verifier?: string; state?: string; url?: URL } | undefined;
  private pending: Pending | undefined;

  constructor(
    readonly server: string,
    private readonly serverUrl: string,
    private readonly settings: OAuthSettings,
    private readonly file: CredentialFile,
  ) {}

  get redirectUrl(): string {
    return `http://127.0.0.1:${this.settings.redirect_port}/callback`;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Boxmaker",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: this.settings.client_secret_file ? "client_secret_basic" : "none",
      ...(this.settings.scopes.length ? { scope: this.settings.scopes.join(" ") } : {}),
    };
  }

  state(): string {
    const s = randomBytes(24).toString("base64url");
    if (this.capture) this.capture.state = s;
    return s;
  }

  clientInformation(): OAuthClientInformationMixed | undefined {
    const stored = this.file.read().client;
    const id = this.settings.client_id;
    if (!id) return stored;
    // A configured client wins; what the SDK stamped on it (its issuer) is kept while the id is the same.
    if (stored?.client_id === id) return stored;
    const secret = this.settings.client_secret_file
      ? readFileSync(this.settings.client_secret_file, "utf8").trim()
      : undefined;
    return { client_id: id, ...(secret ? { client_secret: secret } : {}) };
  }

  saveClientInformation(client: OAuthClientInformationMixed): void {
    this.file.update((c) => ({ ...c, client }));
  }

  tokens(): OAuthTokens | undefined {
    return this.file.read().tokens;
  }

  saveTokens(tokens: OAuthTokens): void {
    this.file.update((c) => ({ ...c, tokens }));
  }

  redirectToAuthorization(url: URL): void {
    if (this.capture) this.capture.url = url;
  }

  saveCodeVerifier(verifier: string): void {
    if (this.capture) this.capture.verifier = verifier;
  }

  codeVerifier(): string {
    if (!this.pending) throw new McpLoginError(`no login to MCP server "${this.server}" is in progress`);
    return this.pending.verifier;
  }

  saveDiscoveryState(discovery: OAuthDiscoveryState): void {
    this.file.update((c) => ({ ...c, discovery }));
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.file.read().discovery;
  }

  invalidateCredentials(scope: "all" | "client" | "tokens" | "verifier" | "discovery"): void {
    if (scope === "verifier") {
      this.pending = undefined;
      return;
    }
    this.file.update((c) => {
      if (scope === "all") return {};
      const { [scope === "client" ? "client" : scope === "tokens" ? "tokens" : "discovery"]: _, ...rest } = c;
      return rest;
    });
  }

  /** Forgets the tokens, the registration and any login in progress; false when nothing was stored. */
  forget(): boolean {
    this.pending = undefined;
    return this.file.remove();
  }

  /**
   * The page for the person to open, or undefined when a stored refresh
   * token was enough (nothing to open: the server is reachable again).
   */
  async start(): Promise<string | undefined> {
    this.capture = {};
    let got: typeof this.capture;
    try {
      const r = await auth(this, { serverUrl: this.serverUrl, ...this.scope() });
      if (r === "AUTHORIZED") return undefined;
    } catch (err) {
      throw new McpLoginError(
        `could not start a login to MCP server "${this.server}": ${messageOf(err)}`,
        Status.UNAVAILABLE,
      );
    } finally {
      got = this.capture;
      this.capture = undefined;
    }
    if (!got.url || !got.verifier || !got.state) {
      throw new McpLoginError(`the MCP SDK made no authorization page for "${this.server}"`, Status.INTERNAL);
    }
    this.pending = { verifier: got.verifier, state: got.state, until: Date.now() + LOGIN_WINDOW_MS };
    return got.url.href;
  }

  /** Takes the address the browser came back to (or a bare code) and exchanges its code for tokens. */
  async finish(callback: string): Promise<void> {
    const p = this.pending;
    if (!p) throw new McpLoginError(`no login to MCP server "${this.server}" is in progress: start one first`);
    if (Date.now() > p.until) {
      this.pending = undefined;
      throw new McpLoginError(
        `the login to MCP server "${this.server}" was started over ${LOGIN_WINDOW_MS / 60_000} minutes ago: start again`,
      );
    }
    const { code } = callbackCode(callback.trim(), p.state);
    try {
      await auth(this, { serverUrl: this.serverUrl, authorizationCode: code, ...this.scope() });
    } catch (err) {
      throw new McpLoginError(
        `MCP server "${this.server}"'s authorization server did not take the code: ${messageOf(err)}`,
        Status.PERMISSION_DENIED,
      );
    }
    this.pending = undefined;
  }

  private scope(): { scope?: string } {
    return this.settings.scopes.length ? { scope: this.settings.scopes.join(" ") } : {};
  }
}

/**
 * The code in what the person brought back: the whole redirect address (its
 * state must be this login's, so a page an attacker started cannot log
 * Boxmaker in to the attacker's account) or, typed by hand, the bare code.
 */
export function callbackCode(callback: string, state: string): { code: string } {
  if (!callback)
    throw new McpLoginError("nothing was given: paste the address the browser ended on", Status.INVALID_ARGUMENT);
  if (!/^[a-z][a-z0-9+.-]*:/i.test(callback) && !callback.startsWith("?")) {
    if (/[\s?&=#/]/.test(callback))
      throw new McpLoginError("that is neither the address the browser ended on nor a code", Status.INVALID_ARGUMENT);
    return { code: callback };
  }
  let q: URLSearchParams;
  try {
    q = callback.startsWith("?") ? new URLSearchParams(callback) : new URL(callback).searchParams;
  } catch {
    throw new McpLoginError("that address cannot be read", Status.INVALID_ARGUMENT);
  }
  const error = q.get("error");
  if (error) {
    const why = q.get("error_description");
    throw new McpLoginError(
      `the authorization server refused: ${error}${why ? ` (${why.slice(0, 300)})` : ""}`,
      Status.PERMISSION_DENIED,
    );
  }
  if (q.get("state") !== state)
    throw new McpLoginError(
      "that address belongs to another login (its state is not this one's): start the login again",
      Status.INVALID_ARGUMENT,
    );
  const code = q.get("code");
  if (!code) throw new McpLoginError("that address carries no code", Status.INVALID_ARGUMENT);
  return { code };
}
