import { entropy } from "./scan.js";

/**
 * The values a secret file holds, as exact strings the network proxy refuses
 * to send out, and the forms a command would send them in. A rule recognises
 * a secret by its shape; a password in `.env` has none, but Boxmaker knows the
 * file is a secret (by name or identity), so it knows the value, and a command
 * that finds it again where no mask covers it (a copy in a config, a commit in
 * .git's objects) still cannot send it. Pure.
 */

/** Shorter values are words a request may hold by chance (`production`, `us-east-1`). */
const MIN_VALUE = 12;
const MAX_VALUE = 4096;
/** Bits per character a value must reach: a name, a path or a sentence does not. */
const MIN_ENTROPY = 3.2;

/** `KEY=value`, `key: value`, `"key": "value",`, `export KEY="value"`: the value; a bare line: the line. */
function lineValue(line: string): string | undefined {
  const t = line.trim();
  if (!t || t.startsWith("#") || t.startsWith("//")) return undefined;
  const m = /^(?:export\s+)?["']?[\w.-]+["']?\s*[=:]\s*(.*)$/.exec(t);
  // A base64 line's padding is no assignment: `MIIE…Q==` is the value whole.
  let v = (m && !/^=*$/.test(m[1]!.trim()) ? m[1]! : t).trim().replace(/,$/, "");
  if (/^(["'`]).*\1$/.test(v)) v = v.slice(1, -1);
  return v;
}

function isKnowableValue(v: string): boolean {
  return v.length >= MIN_VALUE && v.length <= MAX_VALUE && !/\s/.test(v) && entropy(v) >= MIN_ENTROPY;
}

/** The distinct values in a secret file's text worth refusing wherever they appear. */
export function valuesInSecretText(text: string): string[] {
  const out = new Set<string>();
  for (const line of text.split(/\r?\n/)) {
    const v = lineValue(line);
    if (v && isKnowableValue(v)) out.add(v);
  }
  return [...out];
}

/**
 * `value` as a command would encode it: hex either case, and base64 either
 * alphabet at each of the three places it can start in a longer encoded text
 * (its first and last characters depend on its neighbours, so only the middle
 * that does not is kept). Decoding the request finds these too; looking for
 * them as they are also catches one inside bytes no view decodes whole.
 */
export function encodedForms(value: string): string[] {
  const bytes = Buffer.from(value, "utf8");
  const hex = bytes.toString("hex");
  const forms = [value, hex, hex.toUpperCase()];
  for (let lead = 0; lead < 3; lead++) {
    const b64 = Buffer.concat([Buffer.alloc(lead), bytes]).toString("base64");
    // The characters that also encode the lead bytes, and the last group that may hold the next bytes' bits.
    const from = Math.ceil((lead * 4) / 3);
    const to = Math.floor(((lead + bytes.length) * 4) / 3);
    const middle = b64.slice(from, to).replace(/=+$/, "");
    forms.push(middle, middle.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return forms;
}
