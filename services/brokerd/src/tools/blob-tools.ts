import { BLOB_PREFIX, BlobStore } from "../blobs.js";
import { Refused, ToolError } from "../errors.js";
import { type Static, Type } from "@boxmaker/common";
import type { ToolContext, ToolText } from "../tool-table.js";
import { defineTool } from "./define-tool.js";
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

export const readBlob = defineTool({
  name: "read_blob",
  description: `Read lines of a stored large result (${BLOB_PREFIX}…), e.g. a long command output or file.`,
  parameters: Type.Object(
    {
      blob: Type.String({ description: `${BLOB_PREFIX}<hex>` }),
      start_line: Type.Optional(Type.Integer({ minimum: 1 })),
      end_line: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    { additionalProperties: false },
  ),
  risk: "read",
  core: false,
  selfCapped: true,
  plan(args, ctx) {
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
});

const grepParameters = Type.Object(
  {
    blob: Type.String(),
    pattern: Type.String({ description: "JavaScript regular expression" }),
    context: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    ignore_case: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

export const grepBlob = defineTool({
  name: "grep_blob",
  description: `Search a stored large result (${BLOB_PREFIX}…) for a regex; returns matching lines with context.`,
  parameters: grepParameters,
  risk: "read",
  core: false,
  selfCapped: true,
  plan(args, ctx) {
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
});

async function grep(args: Static<typeof grepParameters>, ctx: ToolContext): Promise<ToolText> {
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
