// What a scripted turn streams, cut into the pieces the simulator sends one token at a time.

import { randomId } from "./sse.js";
import type { Turn } from "./script.js";
import { tokenize } from "./tokens.js";

export function splitPieces(text: string | string[] | undefined): string[] {
  if (text === undefined) return [];
  if (Array.isArray(text)) return text;
  return tokenize(text);
}

function chunkChars(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export interface ToolDeltaPlan {
  index: number;
  id: string;
  name: string;
  pieces: string[];
}

export function planToolCalls(turn: Turn): ToolDeltaPlan[] {
  return (turn.toolCalls ?? []).map((call, index) => {
    let pieces: string[];
    if (Array.isArray(call.arguments)) pieces = call.arguments;
    else if (turn.argumentChunkSize && turn.argumentChunkSize > 0)
      pieces = chunkChars(call.arguments, turn.argumentChunkSize);
    else pieces = tokenize(call.arguments);
    // The first delta carries the name even when there are no arguments yet.
    if (pieces.length === 0) pieces = [""];
    return { index, id: call.id ?? randomId(), name: call.name, pieces };
  });
}
