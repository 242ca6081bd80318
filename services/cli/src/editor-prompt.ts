// A long prompt written in the person's own editor: $VISUAL, else $EDITOR,
// else vi, as git does. The text goes to a private temporary file (0600 in a
// 0700 directory) that is removed afterwards, and the editor gets the
// terminal; what it leaves in the file is the message.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export class EditorError extends Error {
  override readonly name = "EditorError";
}

/** The editor command, as a shell word list the shell runs: `code --wait` works as written. */
export function editorCommand(env: NodeJS.ProcessEnv = process.env): string {
  return env.VISUAL?.trim() || env.EDITOR?.trim() || "vi";
}

/**
 * Opens the editor on `initial` and returns what was saved, trailing
 * whitespace trimmed; undefined when it was left empty. Throws EditorError
 * when the editor cannot start or exits non-zero (the text is then not sent:
 * a `:cq` in vim is how a person says "abandon this").
 */
export async function editPrompt(initial: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  const dir = mkdtempSync(join(tmpdir(), "boxmaker-prompt-"));
  // The .md suffix gives the editor Markdown highlighting: prompts are prose with code in them.
  const file = join(dir, "PROMPT.md");
  try {
    writeFileSync(file, initial, { mode: 0o600 });
    const editor = editorCommand(env);
    const code = await new Promise<number | null>((resolve, reject) => {
      // Through the shell, as git does, so an EDITOR with arguments works; the file is "$1", never spliced in.
      const child = spawn("/bin/sh", ["-c", `${editor} "$1"`, editor, file], { stdio: "inherit", env });
      child.once("error", reject);
      child.once("exit", (c, sig) => resolve(sig ? null : c));
    }).catch((err: Error) => {
      throw new EditorError(`cannot start the editor \`${editor}\`: ${err.message}`);
    });
    if (code !== 0)
      throw new EditorError(
        `the editor \`${editor}\` ${code === null ? "was killed" : `exited with status ${code}`}: nothing was sent`,
      );
    const text = readFileSync(file, "utf8").replace(/\s+$/, "");
    return text.trim() ? text : undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
