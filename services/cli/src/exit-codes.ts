/** The CLI's exit codes; documented in `boxmaker --help` and docs/cli.md. Scripts branch on them. */
export const ExitCode = {
  ok: 0,
  failed: 1,
  usage: 2,
  budget: 3,
  /** A tool call was denied, or a staged proposal still waits for a person. */
  needsApproval: 4,
  /** The turn was cancelled or interrupted. */
  interrupted: 5,
  /** loopd (or a daemon behind it) could not be reached. */
  unavailable: 6,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export const EXIT_CODES_HELP = `
Exit codes:
  0  done            the turn finished
  1  failed          the turn or command failed
  2  usage           bad arguments
  3  budget          a budget (iterations, tokens, time) ended the turn
  4  approval        a tool call was denied or waits for approval
  5  interrupted     the turn was cancelled or interrupted
  6  unavailable     loopd could not be reached or did not answer`;
