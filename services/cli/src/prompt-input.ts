import { UsageError } from "./errors.js";

/**
 * The prompt from the arguments, or all of stdin when it is `-` (whose
 * stream code is loaded only then: every command's start-up would pay for it).
 */
export async function readPrompt(words: string[]): Promise<string> {
  const joined =
    words.length === 1 && words[0] === "-"
      ? await (await import("node:stream/consumers")).text(process.stdin)
      : words.join(" ");
  if (!joined.trim()) throw new UsageError("the prompt is empty");
  return joined;
}
