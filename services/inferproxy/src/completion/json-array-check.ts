import { invalidArgument, messageOf } from "@boxmaker/common";

/**
 * Checks that request texts are JSON arrays without re-parsing a whole
 * conversation on every request. A session's next `messages_json` is the
 * previous one with messages appended, so once a text has been checked, a
 * later text that extends it (same bytes up to its closing bracket, then a
 * comma) needs only its new elements parsed. A JSON array's elements are
 * independent values, so checked elements plus checked new elements make a
 * checked array. Anything else is parsed whole, as before.
 */
export class JsonArrayCheck {
  /** Recently checked texts, newest last; one per active slot is enough. */
  private readonly recent: string[] = [];

  constructor(private readonly keep = 4) {}

  require(text: string, field: string, allowEmpty: boolean): void {
    if (this.extendsChecked(text)) {
      this.remember(text);
      return;
    }
    const v = parseJsonArray(text, field);
    if (!allowEmpty && v.length === 0) throw invalidArgument(`${field} is an empty array`, { field });
    this.remember(text);
  }

  private extendsChecked(text: string): boolean {
    for (let i = this.recent.length - 1; i >= 0; i--) {
      const prev = this.recent[i]!;
      if (text === prev) return true;
      const open = prev.length - 1; // where prev's closing bracket stands
      if (
        prev[open] !== "]" ||
        text.length <= prev.length ||
        text[open] !== "," ||
        !text.startsWith(prev.slice(0, open))
      )
        continue;
      if (!prev.slice(0, open).trimEnd().endsWith("[")) {
        // prev had elements: the new ones follow them after the comma.
        try {
          const tail = JSON.parse(`[${text.slice(open + 1)}`) as unknown;
          if (Array.isArray(tail) && tail.length > 0) return true;
        } catch {
          // not a clean extension: parse the whole text and report its error
        }
      }
      return false;
    }
    return false;
  }

  private remember(text: string): void {
    const at = this.recent.indexOf(text);
    if (at >= 0) this.recent.splice(at, 1);
    this.recent.push(text);
    if (this.recent.length > this.keep) this.recent.shift();
  }
}

/** `text` parsed, if it is a JSON array; INVALID_ARGUMENT naming `field` if it is not. */
export function parseJsonArray(text: string, field: string): unknown[] {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw invalidArgument(`${field} is not valid JSON: ${messageOf(err)}`, { field });
  }
  if (!Array.isArray(v)) {
    throw invalidArgument(`${field} must be a JSON array, got ${v === null ? "null" : typeof v}`, { field });
  }
  return v;
}
