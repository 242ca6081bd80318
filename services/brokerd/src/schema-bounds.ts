/**
 * How big a tool's JSON schema may be before brokerd stops working with it.
 * MCP servers send schemas brokerd compiles (ajv), indexes (find_tool) and
 * prints (find_tool, `boxmaker tools`), all of them recursive over the schema:
 * one server's 2,000-deep schema must not overflow the stack for every tool.
 * The walk here is iterative, so measuring never overflows.
 */

/** Nested objects and arrays; real schemas (zod, pydantic) stay well under 20. */
const MAX_SCHEMA_DEPTH = 64;
/** Objects, arrays and scalars: ajv compiles a schema on the event loop, ~0.1 ms per subschema and faster than linearly. */
const MAX_SCHEMA_NODES = 2_000;
/** Characters over every key and string, the size of what find_tool would print. */
const MAX_SCHEMA_CHARS = 512 * 1024;

/** Undefined when the schema is within bounds; otherwise what is too big, for a log line or a refusal. */
export function schemaOverBounds(schema: unknown): string | undefined {
  const stack: Array<[unknown, number]> = [[schema, 1]];
  // Counted when pushed, so one huge array is refused before it is copied onto the stack.
  let nodes = 1;
  let chars = 0;
  const push = (x: unknown, depth: number): boolean => {
    stack.push([x, depth]);
    return ++nodes <= MAX_SCHEMA_NODES;
  };
  const tooMany = `it has more than ${MAX_SCHEMA_NODES} nodes`;
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v === "string") chars += v.length;
    else if (v && typeof v === "object") {
      if (depth > MAX_SCHEMA_DEPTH) return `it is nested more than ${MAX_SCHEMA_DEPTH} levels deep`;
      if (Array.isArray(v)) {
        for (const x of v) if (!push(x, depth + 1)) return tooMany;
      } else {
        for (const k in v) {
          if (!Object.hasOwn(v, k)) continue;
          chars += k.length;
          if (!push((v as Record<string, unknown>)[k], depth + 1)) return tooMany;
        }
      }
    }
    if (chars > MAX_SCHEMA_CHARS) return `it is longer than ${MAX_SCHEMA_CHARS} characters`;
  }
  return undefined;
}
