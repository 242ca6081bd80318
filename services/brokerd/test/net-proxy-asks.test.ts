import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import type { PolicyRule } from "../src/config-types.js";
import { decideNetworkAsk } from "../src/net-proxy/grant.js";
import { connectionVerdict, HostAsks, MAX_PENDING_HOSTS } from "../src/net-proxy/host-asks.js";
import { ProposalStore, type ProposalRecord, type ProposalState } from "../src/staging.js";
import { tempDir } from "../../../test/support/tmp.js";

/**
 * The network ask's decision, pure: host rules first (a deny wins over every grant),
 * then what the session's person said about this host:port. Checked against an oracle
 * written from the docs' words over generated rules and proposal histories.
 */
const HOSTS = ["a.test", "b.test", "registry.npmjs.org", "x.y.example"];
const SESSIONS = ["s1", "s2"];
const PORTS = [80, 443];
const COMMAND = "curl https://example/";

const rulesArb = fc.array(
  fc.record({
    host: fc.constantFrom(...HOSTS),
    // ask weighed up: it is what the grants are about.
    effect: fc.oneof(
      { arbitrary: fc.constant("ask" as const), weight: 4 },
      { arbitrary: fc.constantFrom("allow" as const, "deny" as const), weight: 2 },
    ),
  }),
  { maxLength: 6 },
);

const proposalsArb = fc.array(
  fc.record({
    session: fc.constantFrom(...SESSIONS),
    host: fc.constantFrom(...HOSTS),
    port: fc.constantFrom(...PORTS),
    state: fc.constantFrom<ProposalState>("pending", "applied", "rejected", "failed"),
  }),
  { maxLength: 20 },
);

const toRules = (rs: { host: string; effect: "allow" | "ask" | "deny" }[]): PolicyRule[] =>
  rs.map((r, i) => ({ name: `${r.effect}-${i}`, tool: "run_command", effect: r.effect, hosts: [r.host] }));

const toProposals = (ps: { session: string; host: string; port: number; state: ProposalState }[]) =>
  ps.map(
    (p, i): ProposalRecord => ({
      id: `p-${i}`,
      session_id: p.session,
      call_id: `c${i}`,
      tool: "network",
      arguments_json: "{}",
      preview: "",
      state: p.state,
      rule: "ask",
      created_unix_ms: i,
      result: "",
      checks: {},
      network: { host: p.host, port: p.port, command: COMMAND },
    }),
  );

/** What docs/operations.md says, spelled out without the code's structure. */
function oracle(
  rules: PolicyRule[],
  proposals: ProposalRecord[],
  host: string,
  port: number,
  session: string | undefined,
): { effect: string; proposal?: string; rule?: string } {
  const named = rules.filter((r) => r.hosts!.includes(host));
  if (named.some((r) => r.effect === "deny")) return { effect: "deny" };
  if (!named.some((r) => r.effect === "ask")) return { effect: named.length ? "allow" : "deny" };
  if (session === undefined) return { effect: "deny" };
  const mine = proposals.filter(
    (p) => p.session_id === session && p.network!.host === host && p.network!.port === port,
  );
  for (const [state, effect] of [
    ["applied", "allow"],
    ["rejected", "deny"],
    ["pending", "deny"],
  ] as const) {
    const p = mine.find((q) => q.state === state);
    if (p) return { effect, proposal: p.id };
  }
  const waiting = proposals.filter((p) => p.session_id === session && p.state === "pending").length;
  return waiting >= MAX_PENDING_HOSTS ? { effect: "deny", rule: "net:ask-limit" } : { effect: "stage" };
}

describe("a connection's verdict under ask rules and a session's grants", () => {
  it("agrees with the docs' rules for generated rules, histories, hosts, ports and sessions", () => {
    let granted = 0;
    let staged = 0;
    let denyOverGrant = 0;
    fc.assert(
      fc.property(
        rulesArb,
        proposalsArb,
        // Two of the four: the history's other hosts are noise a verdict must ignore.
        fc.constantFrom("a.test", "b.test"),
        fc.constantFrom(...PORTS),
        fc.option(fc.constantFrom(...SESSIONS), { nil: undefined }),
        (rs, ps, host, port, session) => {
          const rules = toRules(rs);
          const proposals = toProposals(ps);
          const scope = session === undefined ? undefined : { session, callId: "c" };
          const v = connectionVerdict(rules, { host, port, command: COMMAND }, scope, proposals);
          const want = oracle(rules, proposals, host, port, session);
          expect(v).toMatchObject(want);
          if (v.effect === "allow" && v.rule.startsWith("grant:")) granted++;
          if (v.effect === "stage") staged++;
          const grantedHere = proposals.some(
            (p) => p.state === "applied" && p.session_id === session && p.network!.host === host,
          );
          if (v.effect === "deny" && grantedHere && rules.some((r) => r.effect === "deny" && r.hosts!.includes(host)))
            denyOverGrant++;
          // A grant is the session's own, for that port: never another session's, never another port's.
          if (v.effect === "allow" && v.proposal) {
            const p = proposals.find((q) => q.id === v.proposal)!;
            expect([p.session_id, p.network!.host, p.network!.port, p.state]).toEqual([session, host, port, "applied"]);
          }
        },
      ),
      {
        // Each verdict parses the command line (mvdan/sh).
        numRuns: 800,
        // A deny rule over a host the session was granted, always among the runs.
        examples: [
          [
            [
              { host: "a.test", effect: "ask" },
              { host: "a.test", effect: "deny" },
            ],
            [{ session: "s1", host: "a.test", port: 443, state: "applied" }],
            "a.test",
            443,
            "s1",
          ],
        ],
      },
    );
    // The generators reach every interesting case, not just the easy ones.
    expect(granted).toBeGreaterThan(4);
    expect(staged).toBeGreaterThan(40);
    expect(denyOverGrant).toBeGreaterThan(0);
  });

  it("puts at most MAX_PENDING_HOSTS before the person at once, then refuses naming the ones waiting", () => {
    const rules = toRules([{ host: "a.test", effect: "ask" }]);
    const waiting = toProposals(
      Array.from({ length: MAX_PENDING_HOSTS }, (_, i) => ({
        session: "s1",
        host: "b.test",
        port: 1000 + i,
        state: "pending" as const,
      })),
    );
    const v = connectionVerdict(
      rules,
      { host: "a.test", port: 443, command: COMMAND },
      { session: "s1", callId: "c" },
      waiting,
    );
    expect(v).toMatchObject({ effect: "deny", rule: "net:ask-limit" });
    expect(v.effect === "deny" && v.why).toContain(waiting.map((p) => p.id).join(", "));
    // Another session has its own person and its own count.
    expect(
      connectionVerdict(rules, { host: "a.test", port: 443, command: COMMAND }, { session: "s2", callId: "c" }, waiting)
        .effect,
    ).toBe("stage");
  });
});

describe("network proposals in the store", () => {
  const tmp = tempDir("bxna-");
  afterAll(() => tmp.cleanup());
  const target = { host: "registry.npmjs.org", port: 443, command: "npm install left-pad" };
  const scope = { session: "s1", callId: "c1" };
  const ask: PolicyRule[] = [{ name: "ask-npm", tool: "run_command", effect: "ask", hosts: ["registry.npmjs.org"] }];

  it("stages one, grants it on approval, keeps the grant across a restart, and a deny added later wins", () => {
    const dir = `${tmp.dir}/grants`;
    const store = new ProposalStore(dir);
    const asks = new HostAsks(ask, store);
    expect(asks.verdict(target, scope).effect).toBe("stage");
    const p = asks.stage(target, scope, "ask-npm");
    expect(p).toMatchObject({ tool: "network", session_id: "s1", call_id: "c1", network: target });
    expect(p.preview.split("\n")[0]).toBe("network: registry.npmjs.org:443 for `npm install left-pad`");
    expect(asks.verdict(target, scope)).toMatchObject({ effect: "deny", proposal: p.id });
    const done = decideNetworkAsk(store, ask, p, target, true, "");
    expect(done.state).toBe("applied");
    expect(done.result).toMatch(/registry\.npmjs\.org:443 is allowed for this session's commands/);
    // What a restarted brokerd reads back from state_dir.
    const again = new HostAsks(ask, new ProposalStore(dir));
    expect(again.verdict(target, scope)).toEqual({ effect: "allow", rule: `grant:${p.id}`, proposal: p.id });
    expect(again.verdict({ ...target, port: 80 }, scope).effect).toBe("stage");
    expect(again.verdict(target, { session: "s2", callId: "c9" }).effect).toBe("stage");
    const denied: PolicyRule[] = [
      ...ask,
      { name: "no-npm", tool: "run_command", effect: "deny", hosts: ["*.npmjs.org"] },
    ];
    expect(new HostAsks(denied, new ProposalStore(dir)).verdict(target, scope)).toMatchObject({
      effect: "deny",
      rule: "no-npm",
    });
  });

  it("rejecting leaves the host refused for the session, and approving under a deny added since fails", () => {
    const store = new ProposalStore(`${tmp.dir}/rejects`);
    const asks = new HostAsks(ask, store);
    const p = asks.stage(target, scope, "ask-npm");
    const done = decideNetworkAsk(store, ask, p, target, false, "not today");
    expect(done.result).toBe(
      "Rejected by a person: not today. registry.npmjs.org:443 stays refused for this session's commands; do not retry it.",
    );
    const v = asks.verdict(target, scope);
    expect(v).toMatchObject({ effect: "deny", proposal: p.id });
    expect(v.effect === "deny" && v.why).toMatch(/a person refused registry\.npmjs\.org:443 for this session/);
    expect(store.list({ sessionId: "s1" })).toEqual([]);
    const q = asks.stage({ ...target, port: 8443 }, scope, "ask-npm");
    const deny: PolicyRule[] = [{ name: "no-npm", tool: "run_command", effect: "deny", hosts: ["registry.npmjs.org"] }];
    expect(decideNetworkAsk(store, deny, q, q.network!, true, "")).toMatchObject({
      state: "failed",
      result: "Not applied: policy now denies registry.npmjs.org:8443 (no-npm).",
    });
  });
});
