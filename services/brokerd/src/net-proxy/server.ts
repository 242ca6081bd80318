import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { connect, createServer, isIP, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { ConfigError } from "@boxmaker/common";
import type { NetProxyConfig, PolicyRule } from "../config-types.js";
import { Refused } from "../errors.js";
import type { ProposalStore } from "../staging.js";
import {
  type Address,
  canonicalDestination,
  checkPublic,
  type DestinationScope,
  destinationAddress,
  knownAddresses,
  type Resolver,
} from "../policy/destination.js";
import { type CallScope, HostAsks, waitingText } from "./host-asks.js";
import { readForwardBody } from "./forward-body.js";
import { checkRequest, type SecretCheck } from "./request-secrets.js";
import { knownValues, type SecretFiles, watchForSecrets } from "./secret-watch.js";
import type { ConnectionRecord } from "./connection-record.js";
import { handshake, type Target } from "./handshake.js";

// Its own module so the handshake and the audit line need not import the server; tests import it from here.
export type { ConnectionRecord };

export interface NetProxyDeps {
  config: NetProxyConfig;
  rules: readonly PolicyRule[];
  /** Where each command's socket is made: brokerd's own state directory, never inside a workspace. */
  dir: string;
  /** Where an ask is staged for a person and their grants are found; absent: ask is refused. */
  proposals?: ProposalStore;
  record(run: string, command: string, c: ConnectionRecord, scope: CallScope | undefined): void;
  /** Recognised secrets in a text (secrets/): a plain-HTTP request carrying one is refused. */
  findSecrets(text: string): readonly { rule: string }[];
  resolve?: Resolver;
}

/** A network proposal keeps this much of the command that asked: enough for a person to know it. */
const MAX_ASK_COMMAND = 2000;

/** Longest `sun_path` Linux takes (108 bytes with the NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * The allowlist proxy: for each command a fresh Unix socket, bound into its sandbox,
 * that speaks HTTP CONNECT, absolute-form HTTP and SOCKS5 on the same stream (the
 * first byte tells: SOCKS starts with 5). Each connection is decided for that command
 * by the policy's host rules, canonicalised and refused on private addresses as
 * fetch_url is, and counted.
 */
export class NetProxy {
  private readonly asks: HostAsks;

  constructor(private readonly d: NetProxyDeps) {
    this.asks = new HostAsks(d.rules, d.proposals);
    for (const [host, address] of Object.entries(d.config.addresses))
      if (!isIP(address))
        throw new ConfigError(`sandbox.net_proxy.addresses.${host.slice(0, 100)}: "${address}" is not an IP address`);
    // Sockets a crashed brokerd left: nothing listens on them any more.
    rmSync(d.dir, { recursive: true, force: true });
  }

  /**
   * `scope`: the call the command runs for, so an ask can be put to that session's person; absent for a hook's.
   * `secretFiles`: what the run's masks hide, whose values no request may carry.
   */
  async open(command: string, scope?: CallScope, secretFiles: SecretFiles = []): Promise<ProxyRun> {
    mkdirSync(this.d.dir, { recursive: true, mode: 0o700 });
    const run = randomBytes(6).toString("hex");
    const path = join(this.d.dir, `${run}.sock`);
    if (Buffer.byteLength(path) > MAX_SOCKET_PATH)
      throw new Refused("net:socket-path", `the proxy's socket path ${path} is over ${MAX_SOCKET_PATH} bytes`);
    const r = new ProxyRun(this.d, this.asks, run, command, path, scope, secretFiles);
    await r.listen();
    return r;
  }
}

/** The proxy's side of the destination policy (policy/destination.ts, shared with fetch_url). */
const scopeOf = (config: NetProxyConfig): DestinationScope => ({
  allowPrivateHosts: config.allow_private_hosts,
  addresses: config.addresses,
  who: "commands reach",
  allowKey: "sandbox.net_proxy.allow_private_hosts",
});

export class ProxyRun {
  readonly connections: ConnectionRecord[] = [];
  private readonly server: Server;
  /** Aborted when the command ends: a DNS lookup still running for it is abandoned, not waited for. */
  private readonly ended = new AbortController();
  private readonly open = new Set<Socket>();
  /** Clients only (open also holds upstream sockets): what max_connections counts. */
  private clients = 0;
  private readonly pending = new Set<Promise<void>>();
  private check?: SecretCheck;

  constructor(
    private readonly d: NetProxyDeps,
    private readonly asks: HostAsks,
    readonly run: string,
    private readonly command: string,
    readonly socketPath: string,
    private readonly scope?: CallScope,
    private readonly secretFiles: SecretFiles = [],
  ) {
    this.server = createServer({ allowHalfOpen: true }, (s) => {
      const done = this.handle(s).finally(() => this.pending.delete(done));
      this.pending.add(done);
    });
  }

  listen(): Promise<void> {
    return new Promise((ok, fail) => {
      this.server.once("error", fail);
      this.server.listen(this.socketPath, () => {
        this.server.off("error", fail);
        ok();
      });
    });
  }

  /** Stops accepting, ends what is still open (the command has ended) and waits for every record. */
  async close(): Promise<void> {
    this.ended.abort();
    const closed = new Promise<void>((ok) => this.server.close(() => ok()));
    for (const s of this.open) s.destroy();
    await Promise.all([closed, ...this.pending]);
    rmSync(this.socketPath, { force: true });
  }

  /** Read at the first plain-HTTP request, not at open: a run that only tunnels https never reads a secret file. */
  private secretCheck(): SecretCheck {
    if (this.check) return this.check;
    const known = this.secretFiles.length ? knownValues(this.secretFiles) : undefined;
    this.check = { findSecrets: this.d.findSecrets, ...(known ? { known } : {}) };
    return this.check;
  }

  private track(s: Socket): void {
    this.open.add(s);
    s.once("close", () => this.open.delete(s));
  }

  private async handle(client: Socket): Promise<void> {
    this.track(client);
    this.clients++;
    client.once("close", () => this.clients--);
    const t0 = performance.now();
    const rec: ConnectionRecord = {
      host: "",
      port: 0,
      decision: "denied",
      rule: "net:bad-request",
      bytes_up: 0,
      bytes_down: 0,
      duration_ms: 0,
    };
    const closed = new Promise<void>((ok) => client.once("close", () => ok()));
    client.on("error", () => client.destroy());
    try {
      // Counted before the handshake too: a command holding max_connections half-open is the limit working.
      if (this.clients > this.d.config.max_connections) {
        rec.rule = "net:busy";
        rec.error = `more than ${this.d.config.max_connections} connections at once`;
        client.destroy();
        return;
      }
      const target = await handshake(client, rec, this.d.config.handshake_timeout_ms);
      if (!target) return;
      await this.tunnel(client, target, rec);
    } finally {
      if (!client.destroyed && client.writableEnded) client.destroySoon();
      await closed;
      rec.duration_ms = Math.round(performance.now() - t0);
      this.connections.push(rec);
      this.d.record(this.run, this.command, rec, this.scope);
    }
  }

  private async tunnel(client: Socket, first: Target, rec: ConnectionRecord): Promise<void> {
    let t = first;
    const refuse = (rule: string, why: string, status: 403 | 502 | 504) => {
      rec.rule = rule;
      rec.error = why;
      t.reply(false, status === 403 ? `refused (${rule}): ${why}` : why, status);
      client.end();
    };
    let address: Address;
    const scope = scopeOf(this.d.config);
    try {
      rec.host = canonicalDestination(t.raw);
      rec.port = t.port;
      if (t.head) {
        // Plain HTTP is the one path the proxy can read: the whole first request is checked before any of it
        // goes out (a CONNECT tunnel or SOCKS stream is the client's own bytes, TLS for https, and is not).
        const read = await readForwardBody(client, t.head, t.rest, this.d.config.handshake_timeout_ms);
        if (!read.ok) return refuse(read.status === 403 ? "net:body-too-large" : "net:bad-request", read.why, 403);
        const v = checkRequest(read.head, read.body, read.rest, this.secretCheck());
        if (!v.ok) return refuse(v.rule, v.why, 403);
        t = { ...t, head: read.head, rest: Buffer.concat([read.body, read.rest]) };
      }
      const target = { host: rec.host, port: t.port, command: this.command.slice(0, MAX_ASK_COMMAND) };
      const v = this.asks.verdict(target, this.scope);
      rec.rule = v.rule;
      if (v.effect !== "stage" && v.proposal) rec.proposal = v.proposal;
      if (v.effect === "deny") return refuse(v.rule, v.why, 403);
      if (v.effect === "stage") {
        // A person is not asked about what could never be reached. Only what is known without DNS is checked:
        // resolving a name nobody has approved would let a command send data out in the query itself.
        const known = knownAddresses(rec.host, this.d.config.addresses);
        if (known) checkPublic(rec.host, known, scope);
        // No await since the verdict: a second connection to the same host finds this proposal pending.
        const p = this.asks.stage(target, this.scope!, v.rule);
        rec.proposal = p.id;
        rec.decision = "staged";
        return refuse(v.rule, waitingText(`${rec.host}:${t.port}`, p.id), 403);
      }
      address = await destinationAddress(rec.host, scope, {
        ...(this.d.resolve ? { resolve: this.d.resolve } : {}),
        signal: this.ended.signal,
        timeoutMs: this.d.config.connect_timeout_ms,
      });
    } catch (err) {
      if (err instanceof Refused) return refuse(err.rule, err.message, 403);
      if (!this.ended.signal.aborted) throw err;
      // The command ended while its host was being resolved: its sockets are gone, there is nobody to answer.
      rec.rule = "net:unresolved";
      rec.error = `the command ended while ${rec.host} was being resolved`;
      return;
    }
    rec.address = address.address;
    const upstream = connect({ host: address.address, port: t.port, family: address.family, allowHalfOpen: true });
    this.track(upstream);
    const connected = await new Promise<string | undefined>((ok) => {
      const timer = setTimeout(
        () => ok(`connecting to ${rec.host}:${t.port} took longer than ${this.d.config.connect_timeout_ms} ms`),
        this.d.config.connect_timeout_ms,
      );
      upstream.once("connect", () => {
        clearTimeout(timer);
        ok(undefined);
      });
      upstream.once("error", (err) => {
        clearTimeout(timer);
        ok(`cannot connect to ${rec.host}:${t.port}: ${err.message}`);
      });
      client.once("close", () => ok("the client went away"));
    });
    if (connected !== undefined) {
      upstream.destroy();
      rec.decision = "allowed";
      return refuse(rec.rule, connected, connected.includes("longer") ? 504 : 502);
    }
    rec.decision = "allowed";
    for (const early of [t.head, t.rest]) {
      if (!early?.length) continue;
      upstream.write(early);
      rec.bytes_up += early.length;
    }
    client.on("data", (b: Buffer) => {
      rec.bytes_up += b.length;
    });
    upstream.on("data", (b: Buffer) => {
      rec.bytes_down += b.length;
    });
    upstream.on("error", () => {
      upstream.destroy();
      client.destroy();
    });
    client.on("error", () => upstream.destroy());
    upstream.once("close", () => client.destroySoon());
    client.once("close", () => upstream.destroy());
    t.reply(true, "", 403);
    upstream.pipe(client);
    // A client that sent everything with its request and closed has nothing left to pipe: its end is passed on here.
    if (client.readableEnded) upstream.end();
    else if (t.head) watchForSecrets(client, upstream, rec, () => this.secretCheck());
    else client.pipe(upstream);
  }
}
