import type { ListHooksResponse, ProjectHookFile } from "@boxmaker/common/client";
import type { Style } from "./style.js";

const STATE_WORDS: Record<string, string> = {
  trusted: "trusted: its hooks run",
  untrusted: "NOT trusted: its hooks do not run until `boxmaker hooks trust`",
  invalid: "invalid: nothing in it runs",
};

function fileLine(f: ProjectHookFile, s: Style): string {
  const state = STATE_WORDS[f.state] ?? f.state;
  const colour = f.state === "trusted" ? s.green : f.state === "invalid" ? s.red : s.yellow;
  const sha = f.sha256 ? s.dim(` (sha256 ${f.sha256.slice(0, 12)}…)`) : "";
  return `${s.bold(f.file)} — ${colour(state)}${sha}${f.error ? `\n  ${s.red(f.error)}` : ""}\n`;
}

/** `boxmaker hooks`: every hook by origin, what it fires on and how it runs; project files with their trust. */
export function renderHooks(res: ListHooksResponse, s: Style): string {
  let out = "";
  const origins = ["operator", ...res.projectFiles.map((f) => f.file)];
  for (const origin of origins) {
    const file = res.projectFiles.find((f) => f.file === origin);
    out += file ? fileLine(file, s) : `${s.bold("operator")} ${s.dim("(brokerd's config)")}\n`;
    const hooks = res.hooks.filter((h) => h.origin === origin);
    if (!hooks.length) out += s.dim("  no hooks\n");
    for (const h of hooks) {
      const match = h.match.length ? ` on ${h.match.join(", ")}` : "";
      const how = `${h.unsandboxed ? s.yellow("unsandboxed") : "sandboxed"}, ${h.timeoutMs} ms`;
      const off = h.active ? "" : s.dim(" (not run)");
      out += `  ${h.event} ${s.bold(h.name)}${match} · ${how}${off}\n    ${s.dim(h.command)}\n`;
    }
  }
  return out;
}

/** What a person is asked to trust: the file's whole content, exactly as hashed. */
export function renderTrustQuestion(f: ProjectHookFile, s: Style): string {
  const body = f.text.endsWith("\n") ? f.text : `${f.text}\n`;
  return `${s.bold(f.file)} ${s.dim(`sha256 ${f.sha256}`)}\n${body}`;
}
