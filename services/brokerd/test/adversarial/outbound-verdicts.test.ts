import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { requires } from "../../../../test/support/requirements.js";
import { bwrapPath } from "../helpers.js";
import { childMain, type Verdict, type VerdictRun, type Verdicts } from "./outbound-verdicts-child.js";

/**
 * fetch_url and the network proxy judge destinations by one policy (policy/destination.ts),
 * so for every way of writing a host they must come to the same verdict: let through,
 * refused as private, as unresolved, or as no host at all. Generated hosts go to fetch_url
 * (a call through a real broker) and to the proxy (CONNECT and SOCKS5 over its socket),
 * once with no allow_private_hosts and once with every host in both lists, in a child in
 * its own network namespace so nothing that passes reaches out.
 */
const haveBwrap = requires("fetch_url and the proxy's verdicts on generated hosts", ["bwrap"]);

const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
const CHILD = fileURLToPath(new URL("./outbound-verdicts-child.ts", import.meta.url));

function inNamespace(run: VerdictRun): Verdicts {
  const script = `import { ${childMain.name} } from ${JSON.stringify(CHILD)}; await ${childMain.name}();`;
  const child = spawnSync(
    bwrapPath,
    ["--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", process.execPath, "--import", "tsx"].concat([
      "--input-type=module",
      "-e",
      script,
    ]),
    { cwd: REPO, input: JSON.stringify(run), encoding: "utf8", timeout: 240_000, maxBuffer: 64 * 1024 * 1024 },
  );
  if (child.status !== 0) throw new Error(`the child failed (${child.status}): ${child.stderr.slice(-2000)}`);
  return JSON.parse(child.stdout) as Verdicts;
}

// --- IPv4: addresses in special and public blocks, and every spelling the URL parser reads as one ---

const SPECIAL_V4: Array<[string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
];
const PUBLIC_V4: Array<[string, number]> = [
  ["8.8.8.0", 24],
  ["1.1.1.0", 24],
  ["93.184.0.0", 16],
  ["151.101.0.0", 16],
];
const v4Num = (a: string) => a.split(".").reduce((n, o) => n * 256 + Number(o), 0);
const toV4 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
const inBlock = ([net, bits]: [string, number]) => fc.nat({ max: 2 ** (32 - bits) - 1 }).map((h) => v4Num(net) + h);
const privateV4 = fc.oneof(...SPECIAL_V4.map(inBlock));
const publicV4 = fc.oneof(...PUBLIC_V4.map(inBlock));
const anyV4 = fc.oneof(privateV4, publicV4);

/** One number in decimal, octal (leading 0) or hex (0x, either case). */
const numberIn = (n: number) =>
  fc.constantFrom("dec", "oct", "hex", "HEX").map((how) => {
    if (how === "oct") return `0${n.toString(8)}`;
    if (how === "hex") return `0x${n.toString(16)}`;
    if (how === "HEX") return `0X${n.toString(16).toUpperCase()}`;
    return String(n);
  });
/** IPv4 as four, three, two or one parts (the last part holds the rest), each in its own base, maybe with a trailing dot. */
const v4Spelling = (n: number) =>
  fc.tuple(fc.integer({ min: 1, max: 4 }), fc.boolean()).chain(([parts, dot]) => {
    const bytes = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
    const head = bytes.slice(0, parts - 1);
    const rest = bytes.slice(parts - 1).reduce((a, b) => a * 256 + b, 0);
    return fc.tuple(...[...head, rest].map(numberIn)).map((ps) => ps.join(".") + (dot ? "." : ""));
  });
const v4Literal = anyV4.chain(v4Spelling);

/** Strings that end in a number yet are no IPv4 address: the URL parser refuses them. */
const notV4 = fc.oneof(
  fc.tuple(anyV4, fc.integer({ min: 256, max: 999 })).map(([n, big]) => `${toV4(n).replace(/^\d+/, String(big))}`),
  fc.tuple(anyV4, fc.nat({ max: 255 })).map(([n, extra]) => `${toV4(n)}.${extra}`),
  // A leading 0 makes a part octal, where 8 and 9 are no digits.
  fc.tuple(anyV4, fc.constantFrom("8", "9")).map(([n, d]) => toV4(n).replace(/\.\d+$/, `.0${d}`)),
  fc.constantFrom("08.8.8.8", "0x100.0.0.1", "4294967296", "1.2.3.09", "0xfffffffff"),
);

// --- IPv6: special blocks, public ones, IPv4 carried inside, zone ids; spelled compressed or not ---

const SPECIAL_V6 = [
  "::1",
  "::",
  "fc00::",
  "fd12:3456::",
  "fe80::",
  "fec0::",
  "ff02::",
  "100::",
  "2001:db8::",
  "64:ff9b:1::",
];
const PUBLIC_V6 = ["2606:4700::", "2a00:1450:4001::", "2001:4860:4860::"];
const groupsOf = (a: string): number[] => {
  const [h, t] = a.split("::") as [string, string | undefined];
  const p = (s: string | undefined) => (s ? s.split(":").map((g) => parseInt(g, 16)) : []);
  return t === undefined ? p(h) : [...p(h), ...Array(8 - p(h).length - p(t).length).fill(0), ...p(t)];
};
const spellGroups = (g: number[], upper: boolean, zeros: boolean, compress: boolean) => {
  const parts = g.map((x) => {
    const s = zeros ? x.toString(16).padStart(4, "0") : x.toString(16);
    return upper ? s.toUpperCase() : s;
  });
  const text = parts.join(":");
  if (!compress) return text;
  const run = [...`:${text}:`.matchAll(/(:0+)+:/g)].sort((a, b) => b[0].length - a[0].length)[0];
  return run ? `:${text}:`.replace(run[0], "::").replace(/^:(?!:)|(?<!:):$/g, "") : text;
};
const howArb = fc.tuple(fc.boolean(), fc.boolean(), fc.boolean());
const v6Base = fc.oneof(
  fc.tuple(fc.constantFrom(...SPECIAL_V6, ...PUBLIC_V6), fc.nat({ max: 0xffff })).map(([net, low]) => {
    const g = groupsOf(net);
    // ::1 and :: stay themselves; elsewhere the last group varies.
    if (net !== "::1" && net !== "::") g[7] = low;
    return g;
  }),
  fc
    .tuple(anyV4, fc.constantFrom("mapped", "siit", "compat", "nat64", "6to4", "teredo"), fc.nat({ max: 0xffff }))
    .map(([n, form, r]) => {
      const hi = n >>> 16;
      const lo = n & 0xffff;
      if (form === "mapped") return [0, 0, 0, 0, 0, 0xffff, hi, lo];
      if (form === "siit") return [0, 0, 0, 0, 0xffff, 0, hi, lo];
      if (form === "compat") return [0, 0, 0, 0, 0, 0, hi, lo];
      if (form === "nat64") return [0x64, 0xff9b, 0, 0, 0, 0, hi, lo];
      if (form === "6to4") return [0x2002, hi, lo, r, 0, 0, 0, 1];
      return [0x2001, 0, 0x0808, 0x0808, 0x8000, r, hi ^ 0xffff, lo ^ 0xffff];
    }),
);
const v6Text = fc.tuple(v6Base, howArb).map(([g, [u, z, c]]) => spellGroups(g, u, z, c));
/** Mapped and NAT64 addresses also written with the IPv4 part dotted. */
const v6Dotted = fc
  .tuple(anyV4, fc.constantFrom("::ffff:", "::FFFF:", "64:ff9b::", "::ffff:0:"))
  .map(([n, prefix]) => `${prefix}${toV4(n)}`);
const v6Literal = fc
  .tuple(fc.oneof(v6Text, v6Dotted), fc.constantFrom("", "", "", "%eth0", "%25lo", "%1"))
  .map(([a, zone]) => `[${a}${zone}]`);

// --- names: what the one DNS answers for them, in spellings that must all be the same name ---

const label = fc.stringMatching(/^[a-z0-9](?:[a-z0-9-]{0,8}[a-z0-9])?$/);
const nameArb = fc.array(label, { minLength: 1, maxLength: 3 }).map((ls) => `${ls.join(".")}.test`);
const answerArb = fc.oneof(
  fc.constant([] as string[]),
  fc.array(
    fc.oneof(
      privateV4.map(toV4),
      publicV4.map(toV4),
      v6Text.filter((a) => !a.includes(".")),
    ),
    { minLength: 1, maxLength: 3 },
  ),
);
/** A name in another spelling: some letters upper case, maybe a trailing dot. */
const respell = (name: string) =>
  fc
    .tuple(fc.array(fc.boolean(), { minLength: name.length, maxLength: name.length }), fc.boolean())
    .map(([ups, dot]) => [...name].map((c, i) => (ups[i] ? c.toUpperCase() : c)).join("") + (dot ? "." : ""));
/** A name with what no DNS name holds: a character outside letters, digits, - and _, an empty label, a hyphen at an end. */
const badName = fc
  .tuple(nameArb, fc.constantFrom("*", "!", "$", "'", "(", "+", ",", ";", "=", "&", "~", "..", "-"))
  .map(([n, bad]) => (bad === "-" ? `-${n}` : n.replace(".", bad === ".." ? ".." : `${bad}.`)));

interface Case {
  host: string;
  dns?: [string, string[] | undefined];
}
const caseArb: fc.Arbitrary<Case> = fc.oneof(
  { weight: 3, arbitrary: v4Literal.map((host) => ({ host })) },
  { weight: 3, arbitrary: v6Literal.map((host) => ({ host })) },
  { weight: 1, arbitrary: notV4.map((host) => ({ host })) },
  { weight: 1, arbitrary: badName.map((host) => ({ host })) },
  {
    weight: 4,
    arbitrary: fc
      .tuple(nameArb, fc.option(answerArb, { freq: 6 }))
      .chain(([name, answer]) => respell(name).map((host): Case => ({ host, dns: [name, answer ?? undefined] }))),
  },
);

const CASES = 300;

describe.runIf(haveBwrap)("fetch_url and the network proxy give one verdict per destination", () => {
  it("for generated IPv4 spellings, IPv6 forms with zones and embedded IPv4, bad names and names DNS answers", () => {
    const seed = Date.now() ^ (Math.random() * 0x7fffffff);
    const cases = fc.sample(caseArb, { numRuns: CASES, seed });
    const dns: Record<string, string[]> = {};
    for (const c of cases) if (c.dns?.[1]) dns[c.dns[0]] = c.dns[1];
    const hosts = cases.map((c) => c.host);
    const tally: Record<string, number> = {};
    for (const allowAll of [false, true]) {
      const v = inNamespace({ hosts, dns, allowAll });
      hosts.forEach((host, i) => {
        const all: Verdict[] = [v.fetch[i]!, v.connect[i]!, v.socks[i]!];
        const label = `${host} (allowAll=${allowAll}, dns ${JSON.stringify(dns[host.toLowerCase().replace(/\.$/, "")])}, seed ${seed})`;
        expect(all, label).toEqual([all[0], all[0], all[0]]);
        expect(all[0], label).not.toMatch(/^other/);
        const key = `${allowAll ? "allowed" : "none"}:${all[0]}`;
        tally[key] = (tally[key] ?? 0) + 1;
      });
    }
    console.log(`[outbound verdicts] ${CASES} hosts × 2 configs × 3 ways, seed ${seed}: ${JSON.stringify(tally)}`);
    // Every verdict occurs: the comparison is not of two components refusing (or passing) everything.
    for (const key of ["none:passed", "none:private", "none:unresolved", "none:no-host", "allowed:passed"])
      expect(tally[key], key).toBeGreaterThan(0);
    // With every host allowed nothing is refused as private, and a name DNS cannot answer stays unresolved.
    expect(tally["allowed:private"]).toBeUndefined();
    expect(tally["allowed:unresolved"]).toBe(tally["none:unresolved"]);
  }, 300_000);
});
