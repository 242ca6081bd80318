import { isAbsolute, join } from "node:path";
import { ConfigError } from "@boxmaker/common";
import type { SecretAllowEntry } from "../config-types.js";
import { PathMatcher } from "../policy/glob.js";
import type { PathGuard, ResolvedPath } from "../policy/paths.js";
import type { Plan, ToolDef } from "../tool-table.js";
import { type FoundSecret, defaultRules, maskSecrets, scanSecrets } from "./scan.js";
import { bareValueIn, NAMED_VALUE_RULE, nameSaysSecret } from "./named-value.js";
import type { SecretRule } from "./rules.js";

/** A workspace file a stretch of a result came from: its content only (no header, no `rel:line: `). */
interface FileSpan {
  start: number;
  end: number;
  path: Pick<ResolvedPath, "rel" | "abs">;
}

/** A `search_files` hit line: `rel:line: text`. */
const HIT_LINE = /^(.+?):(\d+): /;

/**
 * Which files a result's text came from, for the allow entries with a path and
 * for remembering a file that holds a secret. read_file's whole text is its
 * file; search_files' lines each name theirs. Other tools' text (a command's
 * output, a fetched body, an MCP result) comes from no file brokerd can name.
 */
function fileSpans(tool: ToolDef, plan: Plan | undefined, text: string): FileSpan[] {
  const p = plan?.paths[0];
  if (!p) return [];
  if (tool.name === "read_file") {
    // A ranged read's header line is not the file's content.
    const header = /^\[[^\n]*: lines \d+-\d+ of [^\n]*\]\n/.exec(text)?.[0].length ?? 0;
    return [{ start: header, end: text.length, path: p }];
  }
  if (tool.name !== "search_files") return [];
  const spans: FileSpan[] = [];
  let at = 0;
  for (const line of text.split("\n")) {
    const m = HIT_LINE.exec(line);
    if (m && !isAbsolute(m[1]!))
      spans.push({ start: at + m[0].length, end: at + line.length, path: { rel: m[1]!, abs: join(p.root, m[1]!) } });
    at += line.length + 1;
  }
  return spans;
}

/**
 * Secrets recognised by content in what a tool returns, masked before the
 * model, the blob store or a hook sees it; a file found holding one is a
 * secret by identity from then on (refused like a named one, and masked from
 * commands while it is still that file at that path). The operator's
 * `secrets.allow` entries are the way out for a false positive.
 */
export class ResultSecrets {
  private readonly allow: { rule?: string; path?: PathMatcher }[];

  constructor(
    allow: readonly SecretAllowEntry[],
    private readonly guard: Pick<PathGuard, "rememberSecretFile" | "recogniseByContent">,
    private readonly rules: readonly SecretRule[] = defaultRules(),
  ) {
    const known = new Set([...rules.map((r) => r.id), NAMED_VALUE_RULE]);
    const unknown = allow.filter((a) => a.rule !== undefined && !known.has(a.rule));
    if (unknown.length)
      throw new ConfigError(
        `key "secrets.allow": ${unknown.map((a) => JSON.stringify(a.rule)).join(", ")} ${unknown.length === 1 ? "is" : "are"} not a rule id of secrets/rules.json (nor ${NAMED_VALUE_RULE})`,
      );
    this.allow = allow.map((a) => ({
      ...(a.rule ? { rule: a.rule } : {}),
      ...(a.path ? { path: new PathMatcher([a.path], { ignoreCase: true }) } : {}),
    }));
    // Commands see a file named like a secret masked when its content is one, judged as results are.
    guard.recogniseByContent({
      wants: (name) => nameSaysSecret(name),
      holds: (rel, abs, text) => this.holds({ start: 0, end: text.length, path: { rel, abs } }, text),
    });
  }

  /** Whether a file's text holds a secret no allow entry lets through. */
  private holds(span: FileSpan, text: string): boolean {
    const found = [...scanSecrets(text, this.rules, (r) => this.offEverywhere(r)), ...this.bareValues([span], text)];
    return found.some((f) => !this.allowed(f, span.path));
  }

  /** Rules no entry limits to a path are off everywhere: not even run. */
  private offEverywhere(rule: string): boolean {
    return this.allow.some((a) => !a.path && a.rule === rule);
  }

  private allowed(f: FoundSecret, file: FileSpan["path"] | undefined): boolean {
    return this.allow.some(
      (a) => (!a.rule || a.rule === f.rule) && (!a.path || (file !== undefined && a.path.matches(file.rel, file.abs))),
    );
  }

  /** The secrets in text that no allow entry lets through (for the network proxy, which has no file). */
  find(text: string): FoundSecret[] {
    return scanSecrets(text, this.rules, (r) => this.offEverywhere(r)).filter((f) => !this.allowed(f, undefined));
  }

  /** A file named like a secret that holds one bare value (named-value.ts): that value, where it is. */
  private bareValues(spans: readonly FileSpan[], text: string): FoundSecret[] {
    if (this.offEverywhere(NAMED_VALUE_RULE)) return [];
    const out: FoundSecret[] = [];
    for (const s of spans) {
      if (!nameSaysSecret(s.path.rel)) continue;
      const v = bareValueIn(text.slice(s.start, s.end));
      if (v) out.push({ rule: NAMED_VALUE_RULE, start: s.start + v.start, end: s.start + v.end });
    }
    return out;
  }

  /** `text` masked; the files it came from that held a secret are remembered by identity. */
  mask(tool: ToolDef, plan: Plan | undefined, text: string): string {
    const spans = fileSpans(tool, plan, text);
    const found = [...scanSecrets(text, this.rules, (r) => this.offEverywhere(r)), ...this.bareValues(spans, text)];
    if (!found.length) return text;
    const fileAt = (f: FoundSecret) => spans.find((s) => f.start >= s.start && f.start < s.end)?.path;
    const masked = found.filter((f) => !this.allowed(f, fileAt(f)));
    const files = new Set<string>();
    for (const f of masked) {
      const file = fileAt(f);
      if (file) files.add(file.abs);
    }
    for (const abs of files) this.guard.rememberSecretFile(abs);
    return maskSecrets(text, masked);
  }
}
