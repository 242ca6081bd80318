import { createHash } from "node:crypto";

/**
 * The template_sha256 llama-server reports for a `--chat-template-file`: its
 * /props chat_template is the file's text less one trailing newline (its
 * Jinja engine drops it, as Jinja's keep_trailing_newline = false does).
 * test/real/chat-template-file.test.ts holds a real server to this; the
 * NixOS module computes the same in nix/lib.nix (templateFileSha256).
 */
export function templateSha256OfFile(text: string): string {
  const trimmed = text.endsWith("\r\n") ? text.slice(0, -2) : /[\r\n]$/.test(text) ? text.slice(0, -1) : text;
  return createHash("sha256").update(trimmed, "utf8").digest("hex");
}
