// Tiny models carrying other families' real chat templates (scripts/llama-server/build.sh
// builds them beside the three named ones): the template probe's and cache health's subjects.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { requires } from "../../support/requirements.js";
import { realBuild } from "./real-llama.js";

export interface TemplateFamily {
  /** The tiny-<name>.gguf build.sh writes. */
  name: string;
  /** The llama.cpp models/templates file it carries. */
  template: string;
}

export const FAMILIES = {
  qwen3: { name: "answer", template: "Qwen-Qwen3-0.6B.jinja" },
  llama33: { name: "llama33", template: "meta-llama-Llama-3.3-70B-Instruct.jinja" },
  nemo: { name: "nemo", template: "mistralai-Mistral-Nemo-Instruct-2407.jinja" },
  deepseek31: { name: "deepseek31", template: "deepseek-ai-DeepSeek-V3.1.jinja" },
  granite4: { name: "granite4", template: "ibm-granite-granite-4.0.jinja" },
} as const satisfies Record<string, TemplateFamily>;

export function familyModel(f: TemplateFamily): string | undefined {
  if (!realBuild) return undefined;
  const p = join(dirname(realBuild.models.answer), `tiny-${f.name}.gguf`);
  return existsSync(p) ? p : undefined;
}

/** For `describe.skipIf`: the real server and every family's tiny model (npm run llama-server:build makes them). */
export function haveTemplateFamilies(): boolean {
  return requires("the template families (test/real/template-*)", ["llama-server"], () =>
    Object.values(FAMILIES).every((f) => familyModel(f) !== undefined),
  );
}
