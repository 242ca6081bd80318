import { pagerFor, tallerThan, type Pager } from "./pager-choice.js";
import { writeText } from "./render/terminal-safe.js";

/** sh's exit codes for a command it could not find or not run: the pager never started. */
const DID_NOT_START = new Set([126, 127]);

/**
 * Prints text meant for a person on stdout — through the pager when stdout is
 * a terminal and the text does not fit on it, else as it is. Either way the
 * bytes are writeText's: data's control characters visible, the CLI's own
 * colours real (less -R shows them). A pager that cannot start leaves the
 * text printed as if there were none.
 */
export async function printPaged(text: string, pagerFlag: boolean | undefined): Promise<void> {
  const out = process.stdout;
  const pager = out.isTTY ? pagerFor(process.env, pagerFlag) : undefined;
  if (!pager || !tallerThan(text, out.rows || 24, out.columns || 80) || !(await paged(text, pager))) {
    writeText(out, text);
  }
}

/** Runs the pager on text; false when it did not start. */
async function paged(text: string, pager: Pager): Promise<boolean> {
  // Loaded only here: everything that prints to a pipe, and all short output, starts no process.
  const { spawn } = await import("node:child_process");
  // A shell line, as git and man run $PAGER: it may carry flags or quotes.
  const child = spawn("sh", ["-c", pager.command], { stdio: ["pipe", "inherit", "inherit"], env: pager.env });
  // Ctrl-C in the pager is the pager's (less stops a search with it); this process waits for it to quit.
  const ignore = () => {};
  process.on("SIGINT", ignore);
  try {
    // Quitting before the end closes the pipe: the reader is done, not an error.
    child.stdin.on("error", ignore);
    writeText(child.stdin, text);
    child.stdin.end();
    const code = await new Promise<number | null>((resolve) => {
      child.once("error", () => resolve(127));
      child.once("close", (c) => resolve(c));
    });
    return !DID_NOT_START.has(code ?? 0);
  } finally {
    process.off("SIGINT", ignore);
  }
}
