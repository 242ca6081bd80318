import { BLOB_PREFIX, BlobStore } from "../blobs.js";
import { Refused, ToolError } from "../errors.js";
import type { ToolDef, ToolText } from "../tool-table.js";
import { checkPattern, runRegex } from "./regex-worker.js";
import { searchSlots } from "./search-slots.js";

const DEFAULT_LINES = 200;

/** grep_blob waits for a search slot (shared with search_files) before it reads its blob. */
const grepSlots = searchSlots;

/** Bounds a blob tool's own output; another blob here would only point at a copy of the same text. */
function bounded(lines: string[], cap: number, hint: string): ToolText {
  const out: string[] = [];
  let used = 0;
  for (const l of lines) {
    if (used + l.length + 1 > cap) {
      out.push(`[… output stopped at ${cap} bytes; ${hint}]`);
      break;
    }
    out.push(l);
    used += l.length + 1;
  }
  return { text: out.join("\n"), isError: false };
}

export const readBlob: ToolDef = {
  name: "read_blob",
  description: `Read lines of a stored large result (${BLOB_PREFIX}…), e.g. a long command output or file.`,
  parameters: {
    type: "object",
    properties: {
      blob: { type: "string", description: `${BLOB_PREFIX}<hex>` },
      start_line: { type: "integer", minimum: 1 },
      end_line: { type: "integer", minimum: 1 },
    },
    required: ["blob"],
    additionalProperties: false,
  },
  risk: "read",
  core: false,
  kind: "builtin",
  origin: "builtin",
  selfCapped: true,
  plan(args: { blob: string; start_line?: number; end_line?: number }, ctx) {
    BlobStore.parseRef(args.blob);
    return {
      paths: [],
      async execute() {
        const lines = ctx.blobs.get(args.blob).split("\n");
        const from = args.start_line ?? 1;
        const to = Math.min(args.end_line ?? from + DEFAULT_LINES - 1, lines.length);
        if (from > lines.length)
          throw new ToolError(`the blob has ${lines.length} lines; start_line ${from} is past the end`);
        const body = lines.slice(from - 1, to);
        const r = bounded(
          [`[lines ${from}-${to} of ${lines.length}]`, ...body],
          ctx.config.result_cap_bytes,
          "ask for fewer lines",
        );
        return r;
      },
    };
  },
};

export const grepBlob: ToolDef = {
  name: "grep_blob",
  description: `Search a stored large result (${BLOB_PREFIX}…) for a regex; returns matching lines with context.`,
  parameters: {
    type: "object",
    properties: {
      blob: { type: "string" },
      pattern: { type: "string", description: "JavaScript regular expression" },
      context: { type: "integer", minimum: 0, maximum: 10 },
      ignore_case: { type: "boolean" },
    },
    required: ["blob", "pattern"],
    additionalProperties: false,
  },
  risk: "read",
  core: false,
  kind: "builtin",
  origin: "builtin",
  selfCapped: true,
  plan(args: { blob: string; pattern: string; context?: number; ignore_case?: boolean }, ctx) {
    BlobStore.parseRef(args.blob);
    checkPattern(args.pattern, args.ignore_case ?? false);
    return {
      paths: [],
      async execute() {
        const release = await grepSlots.acquire(ctx.signal);
        if (!release) {
          throw new Refused(
            "limit:grep-busy",
            `${grepSlots.running} grep_blob searches are running and ${grepSlots.waiting} are waiting; ` +
              "wait for their results before starting another",
          );
        }
        try {
          return await grep(args, ctx);
        } finally {
          release();
        }
      },
    };
  },
};

async function grep(
  args: { blob: string; pattern: string; context?: number; ignore_case?: boolean },
  ctx: Parameters<ToolDef["plan"]>[1],
): Promise<ToolText> {
  const text = ctx.blobs.get(args.blob);
  const r = await runRegex(
    {
      pattern: args.pattern,
      ignoreCase: args.ignore_case ?? false,
      maxMatches: ctx.config.limits.search_max_matches,
      text,
      maxFileBytes: Infinity,
    },
    ctx.config.limits.search_timeout_ms,
    ctx.signal,
  );
  if (r.hits.length === 0) return { text: "no matches", isError: false };
  // Split only once there is something to show: while the worker ran, brokerd held the text alone.
  const lines = text.split("\n");
  const ctxLines = args.context ?? 2;
  const keep = new Set<number>();
  for (const h of r.hits) {
    for (let j = Math.max(1, h.line - ctxLines); j <= Math.min(lines.length, h.line + ctxLines); j++) keep.add(j);
  }
  const out: string[] = [];
  let prev = 0;
  for (const j of [...keep].sort((a, b) => a - b)) {
    if (prev && j > prev + 1) out.push("--");
    out.push(`${j}: ${lines[j - 1]}`);
    prev = j;
  }
  if (r.truncated) out.push(`[… stopped at ${r.hits.length} matches]`);
  return bounded(out, ctx.config.result_cap_bytes, "use a narrower pattern or read_blob with a line range");
}
