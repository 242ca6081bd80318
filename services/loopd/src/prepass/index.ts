import { createHash } from "node:crypto";
import { detectKind, type BlockKind } from "./kind.js";
import { SHOWN, excerptByKind } from "./excerpt.js";
import { collapseRuns, stripAnsi } from "./reduce.js";

export { collapseRuns, expandRuns, stripAnsi } from "./reduce.js";
export { detectKind } from "./kind.js";

const BLOB_PREFIX = "blob:sha256:";
/** Every block prepass wrote starts with this; a message that has one is never touched again. */
export const INPUT_MARK = "[Boxmaker input: ";

export interface PrepassOptions {
  /** A block above this many bytes is reduced, and if still above, excerpted and spilled. */
  threshold_bytes: number;
  /** About how many bytes an excerpt may take. */
  excerpt_bytes: number;
}

export const DEFAULT_PREPASS: PrepassOptions = { threshold_bytes: 32_768, excerpt_bytes: 6_144 };

export interface SpilledBlock {
  /** sha256 of the block's original bytes: the blob it is stored as. */
  hash: string;
  /** The original block, exactly; goes to the blob store. */
  text: string;
  bytes: number;
  lines: number;
  kind: BlockKind;
  /** "reduced": the message carries all of it, reduced losslessly; "excerpt": a verbatim excerpt. */
  form: "reduced" | "excerpt";
  /** Bytes the message carries for the block. */
  shownBytes: number;
}

export interface PrepassResult {
  text: string;
  blocks: SpilledBlock[];
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const fmt = (n: number) => n.toLocaleString("en-US");

/**
 * The inbound pre-pass over a message a person sent, before it is logged.
 * Pure and deterministic: the same bytes give the same hashes and the same
 * message. Blocks (fenced code blocks, or the body of plain text between its
 * short leading and trailing paragraphs) above the threshold are reduced
 * losslessly (ANSI escapes, runs of identical lines); a block still too big is
 * labelled by kind and replaced by a marked, verbatim excerpt that names the
 * blob its whole text is stored as. Blocks already marked are left alone.
 */
export function prepass(text: string, opts: PrepassOptions = DEFAULT_PREPASS): PrepassResult {
  if (text.length <= opts.threshold_bytes || text.includes(INPUT_MARK)) {
    // A string's byte length is at least its length; below the threshold in characters may still be above in bytes.
    if (text.includes(INPUT_MARK) || Buffer.byteLength(text) <= opts.threshold_bytes) return { text, blocks: [] };
  }
  const blocks: SpilledBlock[] = [];
  const out: string[] = [];
  for (const seg of segments(text)) {
    if (seg.fenced || Buffer.byteLength(seg.text) <= opts.threshold_bytes) {
      if (seg.fenced && Buffer.byteLength(seg.body) > opts.threshold_bytes) {
        const b = spill(seg.body, opts);
        blocks.push(b.block);
        out.push(`${seg.open}\n${b.text}\n${seg.close}`);
      } else out.push(seg.text);
      continue;
    }
    const { lead, body, trail } = splitPlain(seg.text, opts.threshold_bytes);
    const b = spill(body, opts);
    blocks.push(b.block);
    out.push(lead + b.text + trail);
  }
  return { text: out.join(""), blocks };
}

function spill(block: string, opts: PrepassOptions): { text: string; block: SpilledBlock } {
  const hash = sha256(block);
  const ref = `${BLOB_PREFIX}${hash}`;
  const bytes = Buffer.byteLength(block);
  const clean = stripAnsi(block);
  const lines = clean.split("\n");
  const kind = detectKind(clean, lines);
  const head = `${INPUT_MARK}${kind}, ${fmt(bytes)} bytes, ${fmt(lines.length)} lines, stored whole as ${ref}.`;
  const reduced = collapseRuns(clean);
  let text: string;
  let form: SpilledBlock["form"];
  if (Buffer.byteLength(reduced) <= opts.threshold_bytes) {
    form = "reduced";
    text =
      `${head} Below: all of it, with ANSI escapes removed and each run of identical lines written once with its count.]\n` +
      `${reduced}\n[end of ${ref}]`;
  } else {
    form = "excerpt";
    let ex: string;
    try {
      ex = excerptByKind(kind, clean, lines, opts.excerpt_bytes);
    } catch {
      ex = excerptByKind("prose", clean, lines, opts.excerpt_bytes);
    }
    text =
      `${head} Below: ${SHOWN[kind]}, verbatim; omitted lines are marked with their numbers. ` +
      `Read any lines with call_tool({"name": "read_blob", "arguments": {"blob": "${ref}", "start_line": 1, "end_line": 200}}) ` +
      `or search with call_tool({"name": "grep_blob", "arguments": {"blob": "${ref}", "pattern": "…"}}).]\n` +
      `${ex}\n[end of excerpt of ${ref}]`;
  }
  return {
    text,
    block: { hash, text: block, bytes, lines: lines.length, kind, form, shownBytes: Buffer.byteLength(text) },
  };
}

interface Segment {
  text: string;
  fenced: boolean;
  open: string;
  body: string;
  close: string;
}

/** Fenced code blocks (``` or ~~~) and the plain text between them, which together are the whole text. */
function segments(text: string): Segment[] {
  const out: Segment[] = [];
  const fence = /^(```|~~~)[^\n]*\n/gm;
  let pos = 0;
  for (;;) {
    fence.lastIndex = pos;
    const m = fence.exec(text);
    if (!m) break;
    const marker = m[1]!;
    const bodyStart = m.index + m[0].length;
    const closeRe = new RegExp(`^${marker}[ \\t]*$`, "gm");
    closeRe.lastIndex = bodyStart;
    const c = closeRe.exec(text);
    if (!c) break; // an unclosed fence: the rest is plain text
    if (m.index > pos) out.push(plain(text.slice(pos, m.index)));
    const bodyEnd = c.index > bodyStart ? c.index - 1 : bodyStart; // drop the newline before the closing fence
    out.push({
      text: text.slice(m.index, c.index + c[0].length),
      fenced: true,
      open: text.slice(m.index, bodyStart - 1),
      body: text.slice(bodyStart, bodyEnd),
      close: c[0],
    });
    pos = c.index + c[0].length;
  }
  if (pos < text.length) out.push(plain(text.slice(pos)));
  return out;
}

const plain = (text: string): Segment => ({ text, fenced: false, open: "", body: text, close: "" });

/**
 * A person's question around a paste stays as written: short paragraphs at
 * the start and end are kept, the body between them is the block. When the
 * body alone is not large, the whole text is the block.
 */
function splitPlain(text: string, threshold: number): { lead: string; body: string; trail: string } {
  const SHORT = 1024;
  const MAX = 4;
  let a = 0;
  for (let k = 0; k < MAX; k++) {
    const i = text.indexOf("\n\n", a);
    if (i < 0 || i - a > SHORT) break;
    a = i + 2;
  }
  let b = text.length;
  for (let k = 0; k < MAX; k++) {
    const i = text.lastIndexOf("\n\n", b - 1);
    if (i < a || b - i > SHORT) break;
    b = i;
  }
  if (Buffer.byteLength(text.slice(a, b)) <= threshold) return { lead: "", body: text, trail: "" };
  return { lead: text.slice(0, a), body: text.slice(a, b), trail: text.slice(b) };
}

/** Every blob a text names, in order of first mention. */
export function blobRefs(text: string): string[] {
  return [...new Set(text.match(/blob:sha256:[0-9a-f]{64}/g) ?? [])];
}
