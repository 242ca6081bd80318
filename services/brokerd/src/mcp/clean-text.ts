/**
 * Control characters (but newlines), invisible formatting (zero-width, bidi
 * overrides and isolates, Unicode tags that smuggle ASCII past a reader) and
 * lone surrogates (\p{Cs} matches only those under the u flag): what a server could use to make a name or description read
 * differently to the model, the search index or a terminal than it is.
 */
const HIDDEN = /(?!\n)\p{Cc}|\p{Cf}|\p{Cs}/gu;

/** Whether a server's string holds characters that cleanText would take out. */
export function hasHiddenCharacters(s: string): boolean {
  HIDDEN.lastIndex = 0;
  return HIDDEN.test(s);
}

/** A server's text as shown to the model and in a terminal: hidden characters out, at most `max` characters. */
export function cleanText(s: unknown, max: number): string {
  if (typeof s !== "string") return "";
  const t = s
    .replace(/\r\n?|[\u0085\u2028\u2029]/g, "\n")
    .replace(/\t/g, " ")
    .replace(HIDDEN, "")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  return t.length > max ? `${t.slice(0, max - 1).replace(HIDDEN, "")}…` : t;
}
