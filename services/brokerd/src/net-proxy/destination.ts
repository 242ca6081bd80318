import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import type { NetProxyConfig } from "../config-types.js";
import { Refused } from "../errors.js";
import { canonicalHost } from "../policy/hosts.js";
import { isPrivateAddress } from "../policy/public-address.js";

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;

const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/** Letters, digits, hyphens and underscores between dots: what a DNS name can be once canonical. */
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/**
 * The host in the one spelling policy rules are matched in (policy/hosts.ts, as for
 * fetch_url), or a refusal when what the client named is no host at all: a NUL, a
 * space, a slash or an `@` left after canonicalising cannot be sent to DNS honestly.
 */
export function canonicalDestination(raw: string): string {
  // The WHATWG parser stops at these (`a/b.test` is `a`): a name carrying one is refused, not cut short.
  if (/[/\\?#\s\p{Cc}]/u.test(raw))
    throw new Refused("net:bad-host", `"${raw.slice(0, 100)}" is not a host name or address`);
  const host = canonicalHost(raw);
  if (isIP(host) || DNS_NAME.test(host)) return host;
  throw new Refused("net:bad-host", `"${raw.slice(0, 100)}" is not a host name or address`);
}

type Cfg = Pick<NetProxyConfig, "addresses" | "allow_private_hosts" | "connect_timeout_ms">;

/** The addresses known without asking DNS: the operator's mapping, or the host is an address itself. */
export function knownAddresses(
  host: string,
  cfg: Pick<Cfg, "addresses">,
): { address: string; family: number }[] | undefined {
  const mapped = Object.entries(cfg.addresses).find(([name]) => canonicalHost(name) === host)?.[1];
  if (mapped !== undefined) return [{ address: mapped, family: isIP(mapped) }];
  if (isIP(host)) return [{ address: host, family: isIP(host) }];
  return undefined;
}

/** Every address must be public unless the operator named the host in `allow_private_hosts`. */
export function checkPublic(
  host: string,
  addrs: readonly { address: string; family: number }[],
  cfg: Pick<Cfg, "allow_private_hosts">,
): { address: string; family: number } {
  if (!addrs.length) throw new Refused("net:unresolved", `cannot resolve ${host}: no addresses`);
  const bad = addrs.find((a) => isPrivateAddress(a.address));
  if (bad && !cfg.allow_private_hosts.some((h) => canonicalHost(h) === host))
    throw new Refused(
      "net:private",
      `${host} is ${bad.address}, a private, loopback or link-local address; commands reach only public addresses ` +
        "(an operator can allow the host in sandbox.net_proxy.allow_private_hosts)",
    );
  return addrs[0]!;
}

/**
 * The address to connect to: the operator's mapping for the host if there is one,
 * else DNS, bounded by `timeout_ms`. Every address must be public unless the operator
 * named the host in `allow_private_hosts`; the one checked is the one connected to (no
 * second lookup a rebinding DNS could answer differently).
 */
export async function checkedAddress(
  host: string,
  cfg: Cfg,
  resolve: Resolver = systemResolver,
): Promise<{ address: string; family: number }> {
  const addrs = knownAddresses(host, cfg) ?? (await lookupWithin(resolve, host, cfg.connect_timeout_ms));
  return checkPublic(host, addrs, cfg);
}

/** getaddrinfo cannot be cancelled: its answer is abandoned at the limit instead of waited for. */
function lookupWithin(resolve: Resolver, host: string, ms: number) {
  return new Promise<{ address: string; family: number }[]>((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Refused("net:unresolved", `resolving ${host} took longer than ${ms} ms`)),
      ms,
    );
    resolve(host).then(
      (a) => {
        clearTimeout(timer);
        ok(a);
      },
      (err: Error) => {
        clearTimeout(timer);
        fail(new Refused("net:unresolved", `cannot resolve ${host}: ${err.message}`));
      },
    );
  });
}
