import { MapOf, Nullable, type Static, StringEnum, Type } from "@boxmaker/common";
import { positive, strings } from "../config-schema-parts.js";

const RISKS = ["read", "write", "exec", "network"] as const;

// What if/then/else asks of each transport. One object shape with a conditional requirement, not a
// union: ajv fills no defaults inside anyOf or oneOf. The type is the union the condition makes.
const stdioTransport = Type.Object({ transport: Type.Optional(Type.Literal("stdio")) });
const stdioNeeds = Type.Object({ command: Type.String() });
const httpNeeds = Type.Object({ url: Type.String() });

const mcpServerObject = Type.Object(
  {
    transport: StringEnum(["stdio", "http"]),
    command: Nullable(Type.String({ minLength: 1 })),
    args: strings({ default: [] }),
    env: MapOf(Type.String(), { required: [], default: {} }),
    cwd: Nullable(Type.String()),
    url: Nullable(Type.String({ pattern: "^https?://" })),
    headers: MapOf(Type.String(), { required: [], default: {} }),
    /**
     * http only: the server is OAuth-protected; a person logs Boxmaker in with
     * `boxmaker mcp login NAME` (tokens kept in brokerd's state_dir, never here).
     * Without client_id the client registers itself (dynamic registration).
     */
    oauth: Nullable(
      Type.Object(
        {
          client_id: Nullable(Type.String({ minLength: 1 })),
          /** A file holding the client secret, for a confidential client (kept out of the config and the Nix store). */
          client_secret_file: Nullable(Type.String({ minLength: 1 })),
          scopes: strings({ default: [] }),
          /** The loopback port the browser is sent back to (http://127.0.0.1:PORT/callback). */
          redirect_port: Type.Integer({ minimum: 1, maximum: 65535, default: 33418 }),
        },
        { additionalProperties: false },
      ),
    ),
    /**
     * How policy treats a tool of this server whose annotations say nothing
     * (readOnlyHint → read, destructiveHint → write, openWorldHint → network);
     * default write (each call asks a person). `tools.<name>.risk` overrides both.
     */
    risk: StringEnum(RISKS, { default: "write" }),
    /** A call's deadline without progress; progress notifications extend it up to max_total_timeout_ms. */
    timeout_ms: positive(30_000),
    /** Starting the server and listing its tools. */
    connect_timeout_ms: positive(10_000),
    /** The hard ceiling for one call, however much progress it reports. */
    max_total_timeout_ms: positive(600_000),
    /** stdio only: run the server in the bwrap sandbox commands use (default true). */
    sandbox: Type.Boolean({ default: true }),
    /** stdio only: extra paths the sandboxed server may read, or read and write. */
    ro_paths: strings({ default: [] }),
    rw_paths: strings({ default: [] }),
    /** Hosts the server reaches: granting any gives a sandboxed server the network, and policy sees them on every call. */
    hosts: strings({ default: [] }),
    /**
     * Argument names holding paths, checked by the path policy like built-in
     * tools' paths (and passed on resolved). Unset: path, paths, source,
     * destination, file, directory when the tool's schema has them; [] turns it off.
     */
    path_args: Nullable(strings()),
    /** Per-tool overrides. */
    tools: MapOf(
      Type.Object(
        { risk: Nullable(StringEnum(RISKS)), path_args: Nullable(strings()), hidden: Nullable(Type.Boolean()) },
        { additionalProperties: false },
      ),
      { default: {}, required: [] },
    ),
  },
  {
    additionalProperties: false,
    if: stdioTransport,
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then/else keyword, not a thenable.
    then: stdioNeeds,
    else: httpNeeds,
  },
);
type McpServerFields = Omit<Static<typeof mcpServerObject>, "transport">;
/** One entry of `mcp_servers`: how to start or reach the server, its limits, and how policy sees its tools. */
export const mcpServerSchema = Type.Unsafe<
  | (McpServerFields & { transport: "stdio" } & Static<typeof stdioNeeds>)
  | (McpServerFields & { transport: "http" } & Static<typeof httpNeeds>)
>(mcpServerObject);
