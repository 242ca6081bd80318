import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** One recorded exchange with a real llama-server (test/fixtures/llama-server/README.md). */
export interface Recording {
  name: string;
  note: string;
  request: { method: string; path: string; body: unknown };
  response: { status: number; content_type: string; body: string };
}

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** The recordings are the project's fixtures (test/fixtures/llama-server), or where the env var says. */
const recordingsDir = process.env.BOXMAKER_LLAMA_RECORDINGS ?? join(repoRoot, "test/fixtures/llama-server");

export function recording(name: string): Recording {
  const file = join(recordingsDir, `${name}.json`);
  if (!existsSync(file)) {
    throw new Error(
      `recording ${file} is missing: set BOXMAKER_LLAMA_RECORDINGS to the llama-server recordings directory`,
    );
  }
  return JSON.parse(readFileSync(file, "utf8")) as Recording;
}

/** The `data:` payloads of a recorded SSE body, for expectations computed independently of the parser. */
export function recordedEvents(r: Recording): unknown[] {
  return r.response.body
    .split("\n\n")
    .filter((e) => e.startsWith("data: ") && e !== "data: [DONE]")
    .map((e) => JSON.parse(e.slice("data: ".length)) as unknown);
}
