/**
 * Where an outbound connection may go: the one policy fetch_url and the network proxy
 * both apply to a host before they connect. The host is read in one spelling (or refused
 * as no host), resolved — by the operator's mapping, as a literal, or by DNS within a
 * time limit and abandoned on the caller's signal — and every address it resolves to must
 * be public unicast (public-address.ts) unless the operator named the host. The address
 * returned is the one checked, so the caller connects to it and never resolves again (a
 * rebinding DNS could answer differently the second time).
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { Refused } from "../errors.js";
import { canonicalHost } from "./hosts.js";
import { isPrivateAddress } from "./public-address.js";

export interface Address {
  address: string;
  family: number;
}

/** DNS as the destination policy asks it; the signal says the answer is no longer wanted. */
export type Resolver = (host: string, signal: AbortSignal) => Promise<Address[]>;

const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

type DestinationRule = "net:bad-host" | "net:unresolved" | "net:private";

/** Every refusal of a destination: no host, no address, or a private one; `rule` says which. */
export class DestinationRefused extends Refused {
  constructor(
    override readonly rule: DestinationRule,
    message: string,
  ) {
    super(rule, message);
  }
}

/** Who is connecting, as the policy needs it: its operator's settings and its words in a refusal. */
export interface DestinationScope {
  /** Hosts, in any spelling, that may be private addresses: the caller's `allow_private_hosts`. */
  allowPrivateHosts: readonly string[];
  /** Host → address used instead of DNS (the proxy's `addresses`); fetch_url has none. */
  addresses?: Readonly<Record<string, string>>;
  /** The subject of "… only public addresses" in a refusal: "fetch_url reaches", "commands reach". */
  who: string;
  /** The config key a refusal names as the way to lift it. */
  allowKey: string;
}

/** Letters, digits, hyphens and underscores between dots: what a DNS name can be once canonical. */
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/**
 * A last label that is a number: the WHATWG parser reads such a host as IPv4 and refuses it
 * when it is no valid one (`08.8.8.8`, `1.2.3.4.5`, `0x100.0.0.1`); sent to DNS, getaddrinfo's
 * own reading of numbers would decide instead of the one the policy judged.
 */
const ENDS_IN_NUMBER = /(?:^|\.)(?:\d+|0x[0-9a-f]*)$/i;

/**
 * The host in the one spelling policy rules are matched in (hosts.ts), or a refusal when
 * what was named is no host at all: a NUL, a space, a slash or an `@` left after
 * canonicalising cannot be sent to DNS honestly, and an IPv6 zone (`fe80::1%eth0`) names
 * an interface of this machine, which no URL can.
 */
export function canonicalDestination(raw: string): string {
  const refuse = () => new DestinationRefused("net:bad-host", `"${raw.slice(0, 100)}" is not a host name or address`);
  // The WHATWG parser stops at these (`a/b.test` is `a`): a name carrying one is refused, not cut short.
  if (/[/\\?#\s\p{Cc}]/u.test(raw)) throw refuse();
  const host = canonicalHost(raw);
  if (isIP(host)) {
    if (host.includes("%")) throw refuse();
    return host;
  }
  if (DNS_NAME.test(host) && !ENDS_IN_NUMBER.test(host)) return host;
  throw refuse();
}

/** The addresses known without asking DNS: the operator's mapping, or the host is an address itself. */
export function knownAddresses(host: string, addresses: Readonly<Record<string, string>> = {}): Address[] | undefined {
  const mapped = Object.entries(addresses).find(([name]) => canonicalHost(name) === host)?.[1];
  if (mapped !== undefined) return [{ address: mapped, family: isIP(mapped) }];
  if (isIP(host)) return [{ address: host, family: isIP(host) }];
  return undefined;
}

/** Every address must be public unless the operator named the host; the first is the one to connect to. */
export function checkPublic(host: string, addrs: readonly Address[], scope: DestinationScope): Address {
  if (!addrs.length) throw new DestinationRefused("net:unresolved", `cannot resolve ${host}: no addresses`);
  const bad = addrs.find((a) => isPrivateAddress(a.address));
  if (bad && !scope.allowPrivateHosts.some((h) => canonicalHost(h) === host))
    throw new DestinationRefused(
      "net:private",
      `${host} resolves to ${bad.address}, a private, loopback or link-local address; ${scope.who} only public addresses ` +
        `(an operator can allow the host in ${scope.allowKey})`,
    );
  return addrs[0]!;
}

export interface Lookup {
  resolve?: Resolver;
  /** The caller's end (a cancel, its own deadline): the lookup is abandoned and this signal's reason thrown. */
  signal: AbortSignal;
  /** The lookup's own limit: past it the host is refused as unresolved. */
  timeoutMs: number;
}

/**
 * The address to connect to for a canonical host (canonicalDestination): known without
 * DNS, or resolved within `timeoutMs`; refused unless every address is public or the
 * operator named the host.
 */
export async function destinationAddress(host: string, scope: DestinationScope, lookup: Lookup): Promise<Address> {
  const addrs = knownAddresses(host, scope.addresses) ?? (await resolveWithin(host, lookup));
  return checkPublic(host, addrs, scope);
}

/**
 * getaddrinfo runs on libuv's thread pool and cannot be cancelled: its answer is abandoned
 * at the limit or the caller's signal instead of waited for, so a slow or silent DNS
 * server holds nobody past either.
 */
function resolveWithin(host: string, { resolve = systemResolver, signal, timeoutMs }: Lookup): Promise<Address[]> {
  if (signal.aborted) return Promise.reject(signal.reason);
  const mine = new AbortController();
  return new Promise<Address[]>((ok, fail) => {
    const end = (settle: () => void) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      mine.abort();
      settle();
    };
    const onAbort = () => end(() => fail(signal.reason));
    const timer = setTimeout(
      () =>
        end(() => fail(new DestinationRefused("net:unresolved", `resolving ${host} took longer than ${timeoutMs} ms`))),
      timeoutMs,
    );
    signal.addEventListener("abort", onAbort, { once: true });
    resolve(host, AbortSignal.any([signal, mine.signal])).then(
      (addrs) => end(() => ok(addrs)),
      (err: Error) =>
        end(() => fail(new DestinationRefused("net:unresolved", `cannot resolve ${host}: ${err.message}`))),
    );
  });
}
