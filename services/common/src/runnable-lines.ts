/**
 * Which lines of a file can run or steer a later program, so a person asked to
 * approve a long write is shown all of those and none of the padding around
 * them (brokerd's summary of a change too big to diff, the CLI's question).
 * A line is inert when it is blank or, in a file whose `#` lines are comments to
 * whatever reads it (shells, Makefiles, Dockerfiles, YAML, Python…), a comment
 * other than `#!`. Anything that could make a `#` line data (a heredoc
 * anywhere in the file) makes every non-blank line count. Markdown is not such a
 * file: an instruction file's headings are read by the model.
 */

const HASH_COMMENTS =
  /(^|\/)(\.git\/hooks\/[^/]+|\.githooks\/[^/]+|\.husky\/[^/]+|[^/]*\.(sh|bash|zsh|ksh|py|rb|pl|ya?ml|toml|mk|cfg|ini|conf)|(GNU)?[Mm]akefile|Dockerfile[^/]*|Containerfile|\.envrc|\.gitignore|[Jj]ustfile)$/;

/** A test for the lines of `path` (whose text is `lines`) that can run: true for each that can. */
export function runnableLineTest(path: string, lines: readonly string[]): (line: string) => boolean {
  const hashInert = HASH_COMMENTS.test(path) && !lines.some((l) => l.includes("<<"));
  return (line) => line.trim() !== "" && !(hashInert && /^\s*#(?!!)/.test(line));
}
