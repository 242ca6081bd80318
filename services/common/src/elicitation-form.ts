/**
 * An MCP form elicitation's fields, read from the server's requested schema
 * (the spec's restricted subset: a flat object of strings, numbers, booleans
 * and single or multiple choices), and the checks on a person's answer. One
 * reading for both sides: the CLI asks field by field with it, brokerd checks
 * the content against it again before anything reaches the server.
 */

interface FieldBase {
  key: string;
  /** What the person reads: the title, else the key. */
  label: string;
  description: string;
  required: boolean;
}

export type FormField = FieldBase &
  (
    | {
        kind: "text";
        format?: "email" | "uri" | "date" | "date-time";
        minLength?: number;
        maxLength?: number;
        default?: string;
      }
    | { kind: "number"; integer: boolean; minimum?: number; maximum?: number; default?: number }
    | { kind: "boolean"; default?: boolean }
    | { kind: "choice"; options: Choice[]; default?: string }
    | { kind: "choices"; options: Choice[]; minItems?: number; maxItems?: number; default?: string[] }
  );

export interface Choice {
  value: string;
  label: string;
}

/** More fields than a person can be asked one by one on a terminal. */
export const MAX_FORM_FIELDS = 40;
const MAX_CHOICES = 100;
const FORMATS = new Set(["email", "uri", "date", "date-time"]);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) ? v : undefined);

/** The form's fields in the server's order, or why the schema is not a form Boxmaker can ask. */
export function formFields(schema: unknown): { fields: FormField[] } | { error: string } {
  if (!isObj(schema) || schema.type !== "object" || !isObj(schema.properties)) {
    return { error: "the requested schema is not an object with properties" };
  }
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((k) => typeof k === "string") : []);
  const entries = Object.entries(schema.properties);
  if (entries.length > MAX_FORM_FIELDS)
    return { error: `the form has ${entries.length} fields (at most ${MAX_FORM_FIELDS})` };
  const fields: FormField[] = [];
  for (const [key, prop] of entries) {
    const f = fieldOf(key, prop, required.has(key));
    if (typeof f === "string") return { error: `field "${key}": ${f}` };
    fields.push(f);
  }
  return { fields };
}

function fieldOf(key: string, p: unknown, required: boolean): FormField | string {
  if (!isObj(p)) return "not a schema";
  const base: FieldBase = { key, label: str(p.title) || key, description: str(p.description) ?? "", required };
  const options = choicesOf(p);
  if (p.type === "string" && options) {
    if (typeof options === "string") return options;
    return { ...base, kind: "choice", options, ...(str(p.default) !== undefined ? { default: str(p.default) } : {}) };
  }
  switch (p.type) {
    case "string": {
      const format = str(p.format);
      if (format !== undefined && !FORMATS.has(format)) return `unknown format "${format}"`;
      return {
        ...base,
        kind: "text",
        ...(format ? { format: format as "email" } : {}),
        ...optional("minLength", num(p.minLength)),
        ...optional("maxLength", num(p.maxLength)),
        ...optional("default", str(p.default)),
      };
    }
    case "number":
    case "integer":
      return {
        ...base,
        kind: "number",
        integer: p.type === "integer",
        ...optional("minimum", num(p.minimum)),
        ...optional("maximum", num(p.maximum)),
        ...optional("default", num(p.default)),
      };
    case "boolean":
      return {
        ...base,
        kind: "boolean",
        ...optional("default", typeof p.default === "boolean" ? p.default : undefined),
      };
    case "array": {
      const items = isObj(p.items) ? choicesOf(p.items) : undefined;
      if (!items) return "an array of something other than choices";
      if (typeof items === "string") return items;
      const d = Array.isArray(p.default) && p.default.every((x) => typeof x === "string") ? p.default : undefined;
      return {
        ...base,
        kind: "choices",
        options: items,
        ...optional("minItems", num(p.minItems)),
        ...optional("maxItems", num(p.maxItems)),
        ...optional("default", d as string[] | undefined),
      };
    }
    default:
      return `type ${JSON.stringify(p.type)} is not one a form can ask`;
  }
}

function optional<K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } {
  return (v === undefined ? {} : { [k]: v }) as { [P in K]?: V };
}

/** `enum` (with the legacy `enumNames`), `oneOf`/`anyOf` of `{const, title}`; undefined when neither. */
function choicesOf(p: Obj): Choice[] | string | undefined {
  const list = Array.isArray(p.enum) ? p.enum : undefined;
  const titled = Array.isArray(p.oneOf) ? p.oneOf : Array.isArray(p.anyOf) ? p.anyOf : undefined;
  if (!list && !titled) return undefined;
  const raw = list ?? titled!;
  if (raw.length === 0 || raw.length > MAX_CHOICES) return `a choice of ${raw.length} options`;
  const names = Array.isArray(p.enumNames) ? p.enumNames : [];
  const out: Choice[] = [];
  for (const [i, o] of raw.entries()) {
    if (list) {
      if (typeof o !== "string") return "a choice that is not a string";
      out.push({ value: o, label: str(names[i]) || o });
    } else {
      if (!isObj(o) || typeof o.const !== "string") return "a titled choice without a string const";
      out.push({ value: o.const, label: str(o.title) || o.const });
    }
  }
  return out;
}

/** A value the person typed for one field, as the field's type; "" takes the default (or leaves it out). */
export function parseFieldInput(f: FormField, raw: string): { value: unknown } | { skip: true } | { error: string } {
  const t = raw.trim();
  if (t === "") {
    if (f.default !== undefined) return { value: f.default };
    return f.required ? { error: "this field is required" } : { skip: true };
  }
  let value: unknown;
  switch (f.kind) {
    case "text":
      value = raw;
      break;
    case "number":
      value = Number(t);
      if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(t)) return { error: "type a number" };
      break;
    case "boolean":
      if (/^(y|yes|true)$/i.test(t)) value = true;
      else if (/^(n|no|false)$/i.test(t)) value = false;
      else return { error: "type y or n" };
      break;
    case "choice": {
      const c = pick(f.options, t);
      if (!c) return { error: `type a number from 1 to ${f.options.length}` };
      value = c.value;
      break;
    }
    case "choices": {
      const picked: string[] = [];
      for (const part of t.split(/[\s,]+/).filter(Boolean)) {
        const c = pick(f.options, part);
        if (!c) return { error: `type numbers from 1 to ${f.options.length}, separated by commas` };
        if (!picked.includes(c.value)) picked.push(c.value);
      }
      value = picked;
      break;
    }
  }
  const why = checkValue(f, value);
  return why ? { error: why } : { value };
}

function pick(options: Choice[], t: string): Choice | undefined {
  const n = /^\d+$/.test(t) ? Number(t) : Number.NaN;
  return options[n - 1] ?? options.find((o) => o.value === t);
}

/** Checks an answer's content against the form: the object that may go to the server, or the first problem. */
export function checkFormContent(
  fields: FormField[],
  content: unknown,
): { content: Record<string, unknown> } | { error: string } {
  if (!isObj(content)) return { error: "the answer is not an object" };
  const known = new Set(fields.map((f) => f.key));
  for (const k of Object.keys(content)) if (!known.has(k)) return { error: `"${k}" is not a field of this form` };
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    if (!(f.key in content) || content[f.key] === undefined) {
      if (f.required) return { error: `"${f.label}" is required` };
      continue;
    }
    const why = checkValue(f, content[f.key]);
    if (why) return { error: `"${f.label}": ${why}` };
    out[f.key] = content[f.key];
  }
  return { content: out };
}

function checkValue(f: FormField, v: unknown): string | undefined {
  switch (f.kind) {
    case "text": {
      if (typeof v !== "string") return "must be text";
      const n = [...v].length;
      if (f.minLength !== undefined && n < f.minLength) return `at least ${f.minLength} characters`;
      if (f.maxLength !== undefined && n > f.maxLength) return `at most ${f.maxLength} characters`;
      return f.format ? formatProblem(f.format, v) : undefined;
    }
    case "number":
      if (typeof v !== "number" || !Number.isFinite(v)) return "must be a number";
      if (f.integer && !Number.isInteger(v)) return "must be a whole number";
      if (f.minimum !== undefined && v < f.minimum) return `at least ${f.minimum}`;
      if (f.maximum !== undefined && v > f.maximum) return `at most ${f.maximum}`;
      return undefined;
    case "boolean":
      return typeof v === "boolean" ? undefined : "must be yes or no";
    case "choice":
      return typeof v === "string" && f.options.some((o) => o.value === v) ? undefined : "not one of the choices";
    case "choices": {
      if (!Array.isArray(v) || !v.every((x) => typeof x === "string" && f.options.some((o) => o.value === x)))
        return "not a list of the choices";
      if (f.minItems !== undefined && v.length < f.minItems) return `choose at least ${f.minItems}`;
      if (f.maxItems !== undefined && v.length > f.maxItems) return `choose at most ${f.maxItems}`;
      return undefined;
    }
  }
}

function formatProblem(format: string, v: string): string | undefined {
  switch (format) {
    case "email":
      return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v) ? undefined : "not an email address";
    case "uri":
      return URL.canParse(v) ? undefined : "not a URI (e.g. https://example.org)";
    case "date":
      return /^\d{4}-\d{2}-\d{2}$/.test(v) && !Number.isNaN(Date.parse(v)) ? undefined : "not a date (YYYY-MM-DD)";
    default:
      return !Number.isNaN(Date.parse(v)) && /^\d{4}-\d{2}-\d{2}T/.test(v)
        ? undefined
        : "not a date and time (ISO 8601)";
  }
}
