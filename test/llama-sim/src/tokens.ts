// A deterministic, approximate tokenizer. It is not Qwen's BPE, but it splits
// text the way byte-level BPE roughly does (words with their leading space,
// single digits, single punctuation, newline runs, one token per CJK
// character), so token counts land within tens of percent of the real server
// and, more importantly, a change anywhere in the text changes the tokens from
// that point on: prefix-cache accounting behaves like the real thing.

// Control tokens of ChatML-style templates are single tokens in real
// vocabularies; keeping them whole makes message boundaries stable cache
// divergence points.
const SPECIAL_TOKENS = [
  "<|endoftext|>",
  "<|im_start|>",
  "<|im_end|>",
  "<think>",
  "</think>",
  "<tool_call>",
  "</tool_call>",
  "<tool_response>",
  "</tool_response>",
] as const;

const FIRST_SPECIAL_ID = 151_643;

const SPECIAL_RE = SPECIAL_TOKENS.map((t) => t.replace(/\|/g, "\\|")).join("|");
const PIECE_RE = new RegExp(
  `${SPECIAL_RE}|[ ]?\\p{L}[\\p{L}\\p{M}]*|\\p{N}|[ \\t]*\\n+|[ \\t]+(?![\\p{L}\\p{N}\\p{P}\\p{S}])|[ ]?[^\\s\\p{L}\\p{N}]|\\s`,
  "gu",
);
// CJK and Hangul have no spaces; real vocabularies hold roughly one token per
// character for rare text.
const CJK_RE = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]/u;
// BPE vocabularies rarely hold very long words whole.
const MAX_WORD_CHARS = 10;

function splitWord(word: string, out: string[]): void {
  if (CJK_RE.test(word)) {
    let pending = "";
    for (const ch of word) {
      if (ch === " ") {
        pending = " ";
        continue;
      }
      out.push(pending + ch);
      pending = "";
    }
    return;
  }
  const lead = word.startsWith(" ") ? 1 : 0;
  if (word.length - lead <= MAX_WORD_CHARS) {
    out.push(word);
    return;
  }
  out.push(word.slice(0, lead + MAX_WORD_CHARS));
  for (let i = lead + MAX_WORD_CHARS; i < word.length; i += MAX_WORD_CHARS) {
    out.push(word.slice(i, i + MAX_WORD_CHARS));
  }
}

/** Split text into token pieces; concatenating the pieces gives the text back. */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  let last = 0;
  for (const m of text.matchAll(PIECE_RE)) {
    const piece = m[0];
    const at = m.index ?? 0;
    // The alternatives cover every character, but never drop text silently.
    if (at > last) out.push(text.slice(last, at));
    last = at + piece.length;
    if (/^[ ]?\p{L}/u.test(piece)) splitWord(piece, out);
    else out.push(piece);
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

export function countTokens(text: string): number {
  return tokenize(text).length;
}

/** Stable numeric id for a piece, in the range of a Qwen vocabulary. */
export function pieceId(piece: string): number {
  const special = (SPECIAL_TOKENS as readonly string[]).indexOf(piece);
  if (special >= 0) return FIRST_SPECIAL_ID + special;
  // FNV-1a: cheap, deterministic across runs and processes.
  let h = 0x811c9dc5;
  for (let i = 0; i < piece.length; i++) {
    h ^= piece.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % FIRST_SPECIAL_ID;
}

export function tokenIds(text: string): number[] {
  return tokenize(text).map(pieceId);
}

/** Length of the longest common prefix of two token sequences. */
export function commonPrefixLength(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
