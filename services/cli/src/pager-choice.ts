import { columns } from "./render/columns.js";

/** A pager to run: its shell command line and the environment it runs with. */
export interface Pager {
  readonly command: string;
  readonly env: NodeJS.ProcessEnv;
}

/**
 * The pager a person asked for, or none: --no-pager, then $BOXMAKER_PAGER,
 * then $PAGER, then less. Set to nothing, or to cat, means "print it as it
 * is" — the same as no pager, without a process in between. less gets
 * LESS=FRX unless the person has a LESS of their own: quit when the text fits
 * (F), pass the CLI's colours through (R), leave the text on the screen after
 * quitting (X), as git does.
 */
export function pagerFor(env: NodeJS.ProcessEnv, pagerFlag: boolean | undefined): Pager | undefined {
  if (pagerFlag === false) return undefined;
  const command = (env.BOXMAKER_PAGER ?? env.PAGER ?? "less").trim();
  if (command === "" || /^(\S*\/)?cat(\s+-)?$/.test(command)) return undefined;
  const isLess = /^(\S*\/)?less(\s|$)/.test(command);
  return { command, env: isLess && env.LESS === undefined ? { ...env, LESS: "FRX" } : env };
}

/** Whether text needs more rows than a terminal of `rows` × `width` has, with a row left for the prompt after it. */
export function tallerThan(text: string, rows: number, width: number): boolean {
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n");
  let taken = 0;
  for (const line of lines) {
    // A line wider than the terminal wraps onto the next rows.
    taken += Math.max(1, Math.ceil(columns(line) / width));
    if (taken >= rows) return true;
  }
  return false;
}
