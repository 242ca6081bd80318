import { basename } from "node:path";
import { entropy } from "./scan.js";

/**
 * A file whose name says it holds a secret (`secrets/db_password.txt`,
 * `api_token`, `prod-passwords.txt`) and whose content is one bare value has no
 * format a rule could recognise: the value is the file. Name and content
 * together are the evidence; either alone is not (a `password-policy.md`, a
 * random id in `notes.txt`). Boxmaker's own heuristic, not gitleaks'.
 */
export const NAMED_VALUE_RULE = "named-secret-value";

const NAME_HINT = /passw(?:or)?d|pwd|secret|token|credential|api[_.-]?key|apikey|private[_.-]?key|auth[_.-]?key/i;

/** Largest file the sandbox walk reads to decide (the value is a line, not a document). */
export const NAMED_VALUE_MAX_BYTES = 4096;

export function nameSaysSecret(path: string): boolean {
  return NAME_HINT.test(basename(path));
}

/** One token of 8–512 characters with no space and at least 3 bits of entropy per character. */
export function isBareSecretValue(value: string): boolean {
  const v = value.trim();
  return v.length >= 8 && v.length <= 512 && !/\s/.test(v) && entropy(v) >= 3;
}

/** Where the bare value is in a file's text, when the text is only that value (and blank lines). */
export function bareValueIn(text: string): { start: number; end: number } | undefined {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  if (lines.length !== 1 || !isBareSecretValue(lines[0]!)) return undefined;
  const v = lines[0]!.trim();
  const start = text.indexOf(v);
  return { start, end: start + v.length };
}
