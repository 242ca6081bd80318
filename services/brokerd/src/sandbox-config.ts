import { MapOf, StringEnum, Type } from "@boxmaker/common";
import { positive, strings } from "./config-schema-parts.js";

const DEFAULT_RO_PATHS = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib64",
  "/nix/store",
  "/run/current-system",
  "/etc/alternatives",
  "/etc/ld.so.cache",
  "/etc/ssl",
  "/etc/ca-certificates",
  "/etc/passwd",
  "/etc/group",
  "/etc/localtime",
  "/etc/nsswitch.conf",
];

/** Kernel limits on every command (rlimits set inside the sandbox before the command starts). */
const sandboxLimits = Type.Object(
  {
    /** RLIMIT_NPROC (not enforced by the kernel for uid 0: run brokerd as its own user). */
    max_processes: positive(256),
    /** RLIMIT_DATA: heap and private writable mappings per process. */
    max_memory_bytes: positive(1024 * 1024 * 1024),
    /** RLIMIT_FSIZE: the largest file one process may write (also bounds each file in /tmp). */
    max_file_bytes: positive(512 * 1024 * 1024),
    /** RLIMIT_NOFILE. */
    max_open_files: positive(1024),
  },
  { additionalProperties: false, default: {} },
);

/** The allowlist proxy commands reach the network through (net-proxy/); off by default. */
const netProxy = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    /** The bridge run inside the sandbox, from its loopback port to the proxy's Unix socket. */
    socat_path: Type.String({ minLength: 1, default: "/usr/bin/socat" }),
    /** The port on the sandbox's own loopback that HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name. */
    port: Type.Integer({ minimum: 1, maximum: 65535, default: 3128 }),
    /** Hosts (canonical, or any spelling of one) that may be private, loopback or link-local addresses. */
    allow_private_hosts: strings({ default: [] }),
    /** Host → IP address, used instead of DNS (an /etc/hosts of the proxy's own). */
    addresses: MapOf(Type.String({ pattern: "^[0-9a-fA-F:.]{2,45}$" }), { default: {}, required: [] }),
    /** DNS and the upstream connect, each. */
    connect_timeout_ms: positive(10_000),
    /** How long a client may take to say where it wants to go. */
    handshake_timeout_ms: positive(10_000),
    /** Connections open at once, per command. */
    max_connections: positive(64),
  },
  { additionalProperties: false, default: {} },
);

/** How commands run: in bwrap or not, their limits, what they see and how they reach the network. */
export const sandboxConfigSchema = Type.Object(
  {
    mode: StringEnum(["bwrap", "none"], { default: "bwrap" }),
    allow_unsandboxed: Type.Boolean({ default: false }),
    bwrap_path: Type.String({ default: "/usr/bin/bwrap" }),
    timeout_ms: positive(120_000),
    output_cap_bytes: positive(1024 * 1024),
    network: Type.Boolean({ default: false }),
    ro_paths: strings({ default: DEFAULT_RO_PATHS }),
    limits: sandboxLimits,
    net_proxy: netProxy,
  },
  { additionalProperties: false, default: {} },
);
