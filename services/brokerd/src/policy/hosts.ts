import { domainToASCII } from "node:url";
import ipaddr from "ipaddr.js";

/**
 * The one spelling of a host that host rules are matched in, so a rule holds for every way
 * of writing the same name: the WHATWG host parser's (`domainToASCII`: case folded,
 * percent-decoding undone, IDNA — fullwidth letters and ideographic full stops included —,
 * IPv4 in hex or one number made dotted), without trailing dots (`blocked.test.` is the same
 * DNS name), userinfo or port, and IPv6 in RFC 5952 form.
 */
export function canonicalHost(raw: string): string {
  let h = raw.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(h)) {
    try {
      h = new URL(h).hostname;
    } catch {
      // not a URL after all: read it as an authority
    }
  }
  h = h.slice(h.lastIndexOf("@") + 1);
  const bracketed = /^\[([^\]]*)\](?::\d*)?$/.exec(h);
  if (bracketed) h = bracketed[1]!;
  else if (/^[^:]*:\d*$/.test(h)) h = h.slice(0, h.lastIndexOf(":"));
  if (h.includes(":") && ipaddr.IPv6.isValid(h)) return ipaddr.IPv6.parse(h).toRFC5952String();
  return (domainToASCII(h) || h.toLowerCase()).replace(/\.+$/, "");
}

/**
 * Whether a rule's host pattern (`api.github.com`, `*.example.org`) covers a host. Both sides
 * are canonical first; `*.` covers names below the domain, not the domain itself.
 */
export function hostMatches(pattern: string, host: string): boolean {
  const h = canonicalHost(host);
  const p = pattern.trim();
  if (p.startsWith("*.")) return h.endsWith(`.${canonicalHost(p.slice(2))}`);
  return canonicalHost(p) === h;
}
