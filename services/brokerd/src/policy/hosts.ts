import { domainToASCII } from "node:url";
import ipaddr from "ipaddr.js";
import { compileGlob, type Glob } from "./glob.js";

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
 * A host as a `/`-separated path of its labels, so host patterns run on the one
 * glob matcher path and tool rules use (policy/glob.ts): a label is a segment.
 * A `/` cannot be in a canonical host; one that is anyway stays inside its label.
 */
function asSegments(host: string): string {
  return host.replace(/\//g, "\u0001").replace(/\./g, "/");
}

const compiled = new Map<string, Glob>();
const MAX_COMPILED = 1_000;

/**
 * A rule's host pattern as a glob over labels. `*` alone is every host; a
 * leading `*.` is one or more labels below the domain (not the domain itself);
 * any other `*` stays within its label (`api-*.example.org`, `10.0.0.*`).
 */
function hostGlob(pattern: string): Glob {
  const cached = compiled.get(pattern);
  if (cached) return cached;
  const p = pattern.trim();
  let g: Glob;
  if (p === "*") g = { test: () => true };
  else if (!p.includes("*")) {
    const want = asSegments(canonicalHost(p));
    g = { test: (h) => h === want };
  } else {
    const canon = (domainToASCII(p) || p.toLowerCase()).replace(/\.+$/, "");
    const body = canon.startsWith("*.") ? `*/**/${asSegments(canon.slice(2))}` : asSegments(canon);
    g = compileGlob(body);
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(pattern, g);
  return g;
}

/**
 * Whether a rule's host pattern (`api.github.com`, `*.example.org`, `*`) covers a host.
 * Both sides are canonical first, so every spelling of a name meets the same rule.
 */
export function hostMatches(pattern: string, host: string): boolean {
  return hostGlob(pattern).test(asSegments(canonicalHost(host)));
}

/**
 * Why a host pattern can never match the host of a request, or undefined when it can.
 * Checked at start (policy/rule-check.ts): a rule that silently matches nothing is a
 * hole where the operator believes there is a wall (`hosts: ["https://x.org/"]`).
 */
export function hostPatternProblem(pattern: string): string | undefined {
  const p = pattern.trim();
  if (p === "") return "is empty";
  if (p === "*") return undefined;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(p) || p.includes("/"))
    return "is a URL or a path; a host pattern is a name such as api.github.com or *.example.org";
  if (p.includes("@")) return "names a user; a host pattern is only the host";
  if (p.includes("**")) return "uses **; * already spans labels only as a leading *. (one or more labels below)";
  if (/^\[.*\]$/.test(p) || (p.includes(":") && !p.includes("*") && ipaddr.IPv6.isValid(p))) return undefined;
  if (p.includes(":")) return "has a port; host rules match the host whatever the port";
  const canon = domainToASCII(p);
  if (!canon) return "is not a valid host name";
  if (canon.split(".").some((label, i, all) => label === "" && i !== all.length - 1)) return "has an empty label";
  return undefined;
}
