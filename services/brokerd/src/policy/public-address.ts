import { isIP } from "node:net";
import ipaddr from "ipaddr.js";

/**
 * Whether an outbound connection (fetch_url, the network proxy) must not go to an address
 * unless the operator allowed the host: anything but public unicast. ipaddr.js names the
 * special ranges (loopback, private, link-local, carrier-grade NAT, reserved, benchmarking,
 * documentation, site-local, ORCHID, …); IPv6 must also be global unicast (2000::/3). An IPv6 address that carries an IPv4 one — mapped,
 * SIIT (rfc6145), NAT64 (rfc6052), 6to4, Teredo (server and client), IPv4-compatible
 * `::a.b.c.d` — reaches that IPv4 address, so it is judged by it: `64:ff9b::7f00:1` is
 * 127.0.0.1.
 */
export function isPrivateAddress(address: string): boolean {
  if (!isIP(address)) return true;
  const addr = ipaddr.parse(address);
  if (addr.kind() === "ipv4") return (addr as ipaddr.IPv4).range() !== "unicast";
  const v6 = addr as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded) return embedded.length === 0 || embedded.some((v4) => v4.range() !== "unicast");
  return v6.range() !== "unicast" || !GLOBAL_UNICAST.some((net) => v6.match(net));
}

const GLOBAL_UNICAST: Array<[ipaddr.IPv6, number]> = [[ipaddr.IPv6.parse("2000::"), 3]];
const COMPATIBLE: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse("::"), 96];

/** The IPv4 addresses an IPv6 address stands for, or undefined when it embeds none. */
function embeddedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4[] | undefined {
  const p = v6.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (v6.range()) {
    case "ipv4Mapped":
    case "rfc6145":
      return [v4(p[6]!, p[7]!)];
    case "rfc6052":
      // 64:ff9b::/96 carries it in the last 32 bits; the local-use 64:ff9b:1::/48 is a local network.
      return v6.match(ipaddr.IPv6.parse("64:ff9b::"), 96) ? [v4(p[6]!, p[7]!)] : [];
    case "6to4":
      return [v4(p[1]!, p[2]!)];
    case "teredo":
      return [v4(p[2]!, p[3]!), v4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
    default:
      // `::` and `::1` are unspecified and loopback; any other ::/96 is IPv4-compatible.
      return v6.match(...COMPATIBLE) && v6.range() === "unicast" ? [v4(p[6]!, p[7]!)] : undefined;
  }
}
