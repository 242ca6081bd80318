import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ConfigError } from "@boxmaker/common";
import { PathGuard } from "../src/policy/paths.js";
import { RULE_SOURCE } from "../src/secrets/rules.js";
import { bareValueIn, isBareSecretValue, nameSaysSecret } from "../src/secrets/named-value.js";
import { ResultSecrets } from "../src/secrets/result-secrets.js";
import { defaultRules, entropy, maskMarker, maskSecrets, scanSecrets } from "../src/secrets/scan.js";

const RULES = defaultRules();
const EXAMPLES = RULES.flatMap((r) => r.examples.map((ex) => ({ rule: r, ex })));
/** Past the 16 KiB a line is scanned whole up to: random base64 on one line, where `key` and `ey` turn up by chance. */
const LONG_NOISE = randomBytes(15_000).toString("base64");

describe("secret rules (secrets/rules.json)", () => {
  it("are gitleaks' own, with their source, commit and license recorded", () => {
    expect(RULE_SOURCE).toMatchObject({ project: "https://github.com/gitleaks/gitleaks", license: "MIT" });
    expect(RULE_SOURCE.commit).toMatch(/^[0-9a-f]{40}$/);
    for (const id of ["private-key", "aws-access-token", "github-pat", "gitlab-pat", "slack-bot-token", "jwt"])
      expect(RULES.map((r) => r.id)).toContain(id);
  });

  it.each(EXAMPLES.map((e) => [e.rule.id, e.ex.slice(0, 24), e] as const))(
    "%s finds its own example (%s…) and the mask leaves none of it",
    (_id, _short, { rule, ex }) => {
      const text = `before\n${ex}\nafter\n`;
      const own = scanSecrets(text, [rule]);
      expect(own.length).toBeGreaterThan(0);
      const masked = maskSecrets(text, scanSecrets(text));
      expect(masked).toContain("[secret masked: ");
      expect(masked.startsWith("before\n")).toBe(true);
      for (const f of own) expect(masked).not.toContain(text.slice(f.start, f.end));
    },
  );

  it("finds nothing in ordinary code and config that only names a secret", () => {
    for (const text of [
      "const token = getToken(req);",
      'password = os.environ["DB_PASSWORD"]',
      // A reference to another variable, not a value.
      `API_KEY=${"$"}{API_KEY}`,
      "PASSWORD=changeme",
      "secret_key: <your key here>",
      "the token is in the vault; ask ops",
      "sk_live_ is the prefix of a live key",
      "-----BEGIN CERTIFICATE-----",
    ])
      expect(scanSecrets(text), text).toEqual([]);
  });

  it("measures entropy as gitleaks does (bits per character)", () => {
    expect(entropy("aaaa")).toBe(0);
    expect(entropy("abab")).toBe(1);
    expect(entropy("abcdefgh")).toBe(3);
  });

  it("masks deterministically: the same text masks the same way, a masked text is stable, and no secret survives", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom(...EXAMPLES.map((e) => e.ex))), {
          maxLength: 6,
        }),
        (pieces) => {
          const text = pieces.join("\n");
          const masked = maskSecrets(text, scanSecrets(text));
          expect(maskSecrets(text, scanSecrets(text))).toBe(masked);
          expect(maskSecrets(masked, scanSecrets(masked))).toBe(masked);
          for (const e of EXAMPLES) if (text.includes(e.ex)) expect(masked).not.toContain(e.ex);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("finds line by line (and around each keyword on a line past 16 KiB) exactly what each rule finds over the whole text", () => {
    const whole = (text: string) => {
      const lower = text.toLowerCase();
      const out: { rule: string; start: number; end: number }[] = [];
      for (const r of RULES) {
        if (r.keywords.length && !r.keywords.some((k) => lower.includes(k))) continue;
        const m = r.re.matcher(text);
        while (m.find()) {
          const [start, end] = [m.start(r.group), m.end(r.group)];
          if (start >= 0 && end > start && (!r.entropy || entropy(text.slice(start, end)) >= r.entropy))
            out.push({ rule: r.id, start, end });
        }
      }
      return out.sort((a, b) => a.start - b.start || b.end - a.end || a.rule.localeCompare(b.rule));
    };
    const byPlace = (xs: { rule: string; start: number; end: number }[]) =>
      [...xs].sort((a, b) => a.start - b.start || b.end - a.end || a.rule.localeCompare(b.rule));
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string({ maxLength: 30 }),
            fc.constantFrom(
              ...EXAMPLES.map((e) => e.ex),
              "key",
              "token: ",
              "x".repeat(5000),
              LONG_NOISE,
              "key=".repeat(5000),
            ),
          ),
          { maxLength: 12 },
        ),
        fc.constantFrom("\n", " ", "\n\n", ""),
        (pieces, sep) => {
          const text = pieces.join(sep);
          expect(byPlace(scanSecrets(text))).toEqual(whole(text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("merges overlapping finds into one marker", () => {
    expect(
      maskSecrets("abcdefgh", [
        { rule: "a", start: 1, end: 4 },
        { rule: "b", start: 3, end: 6 },
      ]),
    ).toBe(`a${maskMarker("a")}gh`);
  });
});

describe("secrets.allow", () => {
  const guard = new PathGuard([], [], []);
  it("refuses a rule id the rules do not have, so a typo cannot look like an exception", () => {
    expect(() => new ResultSecrets([{ rule: "github-pta" }], guard)).toThrow(ConfigError);
    expect(() => new ResultSecrets([{ rule: "github-pat" }, { path: "fixtures/**" }], guard)).not.toThrow();
  });
  it("passes what a rule entry allows through the network check, and nothing else", () => {
    const gh = RULES.find((r) => r.id === "github-pat")!.examples[0]!;
    const aws = RULES.find((r) => r.id === "aws-access-token")!.examples[0]!;
    const s = new ResultSecrets([{ rule: "github-pat" }, { path: "x/**", rule: "aws-access-token" }], guard);
    expect(s.find(`${gh} ${aws}`).map((f) => f.rule)).toEqual(["aws-access-token"]);
  });
});

describe("a bare value in a file named like a secret (named-value.ts)", () => {
  it("needs the name and the content together", () => {
    for (const n of ["secrets/db_password.txt", "api_token", "prod-passwords.txt", "my-secret.conf", "x/API-KEY"])
      expect(nameSaysSecret(n), n).toBe(true);
    for (const n of ["notes.txt", "README", "secrets/notes.txt", "config.yaml"])
      expect(nameSaysSecret(n), n).toBe(false);
    expect(bareValueIn("Zq8xK2mP9wLr4TbN\n")).toEqual({ start: 0, end: 16 });
    expect(bareValueIn("\n  Zq8xK2mP9wLr4TbN  \n\n")).toEqual({ start: 3, end: 19 });
    // A document, a sentence, a low-entropy word, a short one: not a bare secret.
    for (const t of ["# Password policy\nUse 12 characters.\n", "ask ops for it", "aaaaaaaaaaaa", "Zq8x2m"])
      expect(bareValueIn(t), t).toBeUndefined();
  });
  it("finds any generated high-entropy token on its own line", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9+/_=-]{8,200}$/).filter((v) => entropy(v) >= 3),
        fc.constantFrom("", "\n", "\r\n", "\n\n"),
        (v, end) => {
          expect(isBareSecretValue(v)).toBe(true);
          expect(bareValueIn(`${v}${end}`)).toBeDefined();
        },
      ),
    );
  });
});
