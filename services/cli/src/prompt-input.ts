import { text } from "node:stream/consumers";
import { UsageError } from "./errors.js";

/** The prompt from the arguments, or all of stdin when it is `-`. */
export async function readPrompt(words: string[]): Promise<string> {
  const joined = words.length === 1 && words[0] === "-" ? await text(process.stdin) : words.join(" ");
  if (!joined.trim()) throw new UsageError("the prompt is empty");
  return joined;
}
