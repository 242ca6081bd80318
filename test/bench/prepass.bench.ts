// The inbound pre-pass: its cost on a 1 MB paste, and how many tokens of a
// 300 KB log reach the model (the simulator's tokenizer) against the whole log.
import { countTokens } from "@boxmaker/llama-sim";
import { prepass, DEFAULT_PREPASS } from "../../services/loopd/dist/prepass/index.js";
import { buildLog, hugeJson, sourceFile } from "../fixtures/large/generate.mjs";
import { nowMs, p50 } from "./stats.mjs";
import type { Emit } from "./bench-context.js";

export const timeLimitS = 60;

function grow(base: string, bytes: number): string {
  let out = base;
  while (Buffer.byteLength(out) < bytes) out += base;
  return out.slice(0, bytes);
}

export default async function (emit: Emit): Promise<void> {
  const log1mb = grow(buildLog() as string, 1 << 20);
  const src1mb = grow(sourceFile() as string, 1 << 20);
  const json = hugeJson(5000) as string;
  const time = (text: string) => {
    const t: number[] = [];
    for (let i = 0; i < 15; i++) {
      const t0 = nowMs();
      prepass(text, DEFAULT_PREPASS);
      t.push(nowMs() - t0);
    }
    return p50(t);
  };
  emit("prepass_ms_1mb", time(log1mb), "ms");
  emit("prepass_ms_1mb_source", time(src1mb), "ms");
  emit(`prepass_ms_json_${Math.round(Buffer.byteLength(json) / 1024)}kb`, time(json), "ms");

  const lines = (buildLog() as string).split("\n");
  const log300 = [...lines.filter((l) => !l.includes("ERROR") && l.startsWith("2026")).slice(0, 600), ...lines].join(
    "\n",
  );
  const out = prepass(log300, DEFAULT_PREPASS);
  emit("prepass_token_ratio_300kb", countTokens(out.text) / countTokens(log300), "ratio");
  emit("prepass_message_bytes_300kb", Buffer.byteLength(out.text), "bytes");
}
