import { PERMISSION_MODES, parseMode, type PermissionMode } from "@boxmaker/common/lite";
import { completesTo, sessionArgument } from "../completion/value-kinds.js";
import { Argument, Option, type Command } from "commander";
import { withClient, type LoopClient } from "../connection.js";
import { UsageError } from "../errors.js";
import type { GlobalOptions } from "../global-options.js";
import { output } from "../output.js";

/** What each mode lets through without a person, in the words help, chat and docs/cli.md use. */
const WHAT: Record<PermissionMode, string> = {
  "read-only": "plan mode: reads and find_tool only; writes and commands are refused",
  ask: "writes and commands wait for your approval, as the policy says",
  "auto-edit": "file writes are applied without asking; commands still ask",
  auto: "what the policy does not deny runs (commands inside the sandbox); deny rules and protected paths still hold",
};

export const MODE_CHOICES = PERMISSION_MODES.join(" | ");

/**
 * --mode for run and chat. Its words complete, but commander does not check
 * them (choices would): modeFlag does, and also takes "plan" for read-only.
 */
export const modeOption = (description: string): Option =>
  completesTo(new Option("--mode <mode>", description), { words: PERMISSION_MODES });

/** The mode a --mode flag or /mode names; a word that is not one is a usage error naming the choices. */
export function modeFlag(raw: string): PermissionMode {
  const m = parseMode(raw);
  if (!m) throw new UsageError(`"${raw}" is not a mode: ${MODE_CHOICES}`);
  return m;
}

/** One line saying what a session's mode is and does. */
const modeLine = (id: string, mode: string, was?: string) =>
  `${id}: mode ${mode}${was && was !== mode ? ` (was ${was})` : ""} — ${WHAT[parseMode(mode) ?? "ask"]}`;

/** Sets a session's mode and says so; loopd records it and applies it from the session's next tool call. */
export async function setMode(client: LoopClient, sessionId: string, raw: string): Promise<string> {
  const mode = modeFlag(raw);
  const before = (await client.getSession({ id: sessionId })).session?.mode;
  const info = await client.setSessionMode({ sessionId, mode });
  return modeLine(sessionId, info.mode, before);
}

export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("mode")
    .description("show or set a session's permission mode (read-only, ask, auto-edit, auto)")
    .addArgument(sessionArgument("<id>", "the session (see `boxmaker ls`)"))
    .addArgument(completesTo(new Argument("[mode]", MODE_CHOICES), { words: PERMISSION_MODES }))
    .option("--json", 'print {"session", "mode", "previous"} as one JSON object')
    .addHelpText(
      "after",
      `
Modes (a mode is policy, not tools: switching keeps the prompt cache warm):
${PERMISSION_MODES.map((m) => `  ${m.padEnd(10)} ${WHAT[m]}`).join("\n")}
plan is another name for read-only. The mode is recorded in the session's log
and applies from its next tool call, also in a turn that is running; a call
already staged keeps waiting for a person whatever the mode becomes.

Examples:
  boxmaker mode s-mx2icmrq-ac4d6343
  boxmaker mode s-mx2icmrq-ac4d6343 auto-edit`,
    )
    .action(async (id: string, raw: string | undefined, opts: { json?: boolean }) => {
      const mode = raw === undefined ? undefined : modeFlag(raw); // a typo is a usage error before any connection
      const r = await withClient(globals(), async (client) => {
        // `id` may be a prefix: the session is named by its whole id from here on.
        const session = (await client.getSession({ id })).session;
        const full = session?.id || id;
        const previous = session?.mode || "ask";
        const now = mode === undefined ? previous : (await client.setSessionMode({ sessionId: full, mode })).mode;
        return { full, previous, now };
      });
      await output(opts, {
        json: () => ({ value: { session: r.full, mode: r.now, previous: r.previous } }),
        text: () => `${mode === undefined ? modeLine(r.full, r.now) : modeLine(r.full, r.now, r.previous)}\n`,
      });
    });
}

/** What chat knows of its session's mode: the prompt line shows it, /mode and --mode change it. */
export interface ChatMode {
  current: PermissionMode | undefined;
}

/** `/mode [MODE]` in chat: shows or sets the mode; before the first message it is kept for the new session. */
export async function modeSlash(
  line: string,
  ctx: { client: LoopClient; sessionId: string | undefined; mode?: ChatMode },
): Promise<string> {
  const raw = line.trim().split(/\s+/)[1];
  const chat = ctx.mode ?? { current: undefined };
  if (!ctx.sessionId) {
    if (raw !== undefined) chat.current = modeFlag(raw);
    return `${modeLine("new session", chat.current ?? "ask")}${raw !== undefined ? " (from its first message)" : ""}`;
  }
  if (raw === undefined) {
    // Read again: another terminal may have set it (`boxmaker mode`).
    const m = (await ctx.client.getSession({ id: ctx.sessionId })).session?.mode || "ask";
    chat.current = parseMode(m);
    return modeLine(ctx.sessionId, m);
  }
  const said = await setMode(ctx.client, ctx.sessionId, raw);
  chat.current = modeFlag(raw);
  return said;
}
