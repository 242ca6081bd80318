import { toolGlobMatches } from "../policy/glob.js";
import type { HookEvent, HookOrigin, HookSpec, HooksConfig } from "./types.js";

/** One hook as it will run: its spec, where it came from and the name the audit line and the model see. */
export interface SelectedHook {
  spec: HookSpec;
  origin: HookOrigin;
  name: string;
}

export interface HookSource {
  origin: HookOrigin;
  hooks: HooksConfig;
}

/**
 * The hooks that fire for `event` about `subject` (a tool name, or a
 * notification's kind), in order: the operator's first, then each trusted
 * project file's, each in the order written. A hook without `match` fires for
 * every subject; `match` globs are tool-name globs (`*`, `github.*`).
 */
export function hooksFor(sources: readonly HookSource[], event: HookEvent, subject: string): SelectedHook[] {
  const out: SelectedHook[] = [];
  for (const s of sources) {
    (s.hooks[event] ?? []).forEach((spec, i) => {
      if (spec.match && !spec.match.some((g) => toolGlobMatches(g, subject))) return;
      out.push({ spec, origin: s.origin, name: spec.name ?? `${event}[${i}]` });
    });
  }
  return out;
}
