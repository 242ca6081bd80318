import type {
  ElicitRequest,
  ElicitRequestURLParams,
  ElicitResult,
  UrlElicitationRequiredError,
} from "@modelcontextprotocol/sdk/types.js";
import { ElicitationAction, ElicitationMode, type Logger } from "@boxmaker/common";
import type { CallClock } from "./call-clock.js";
import { cleanText } from "./clean-text.js";
import type { McpResult } from "./mcp-result.js";
import type { ElicitationDesk } from "./elicitation-desk.js";

/** A tool call in flight on a server: whose it is, and its clock (stopped while the person is asked). */
export interface CallerOf {
  session: string;
  callId: string;
  tool: string;
  clock: CallClock;
}

const ACTION: Record<number, ElicitResult["action"]> = {
  [ElicitationAction.ACCEPT]: "accept",
  [ElicitationAction.DECLINE]: "decline",
  [ElicitationAction.CANCEL]: "cancel",
};

/** More page links than one refused call may ask a person to open. */
const MAX_PAGES = 3;

/**
 * Answers a server's elicitation/create: the person of the one session whose
 * call is in flight on this server is asked (ElicitationDesk, then loopd and
 * the CLI); never the model. A question nobody can be asked is declined: none
 * outside a call (the server asks on its own), none when calls of two
 * sessions are in flight (stdio carries no link from a server's request to
 * the call it belongs to, and one person's answer must not go to another's
 * call), none when it is not a page Boxmaker will show.
 */
export function elicitationHandler(
  server: string,
  calls: ReadonlySet<CallerOf>,
  desk: ElicitationDesk | undefined,
  log: Logger,
): (req: ElicitRequest, extra: { signal: AbortSignal }) => Promise<ElicitResult> {
  return async (req, extra) => {
    const p = req.params;
    const decline = (why: string): ElicitResult => {
      log.warn({ mcp: server, mode: p.mode ?? "form", why }, "mcp server's question declined");
      return { action: "decline" };
    };
    const sessions = new Set([...calls].map((c) => c.session));
    if (!desk || calls.size === 0) return decline("no tool call of a session is in flight on this server");
    if (sessions.size > 1)
      return decline(`calls of ${sessions.size} sessions are in flight: whose question it is cannot be told`);
    const caller = [...calls].at(-1)!;
    if (p.mode === "url" && urlProblem(p.url)) return decline(urlProblem(p.url)!);
    const release = [...calls].map((c) => c.clock.hold());
    try {
      const a = await desk.ask(
        {
          sessionId: caller.session,
          callId: caller.callId,
          server,
          tool: caller.tool,
          message: cleanText(p.message, 4000),
          ...(p.mode === "url"
            ? { mode: ElicitationMode.URL, url: p.url }
            : { mode: ElicitationMode.FORM, requestedSchema: p.requestedSchema }),
        },
        extra.signal,
      );
      return {
        action: ACTION[a.action] ?? "cancel",
        ...(a.content ? { content: a.content as ElicitResult["content"] } : {}),
      };
    } finally {
      for (const r of release) r();
    }
  };
}

/**
 * A call the server refused until the person finishes steps in a browser
 * (error -32042): each page is put to the person; when they say every one is
 * done the caller sends the call once more. The model is told only that a
 * person was asked, never the pages (they can carry a sign-in's state).
 */
export async function askBeforeRetry(
  host: { name: string; desk?: ElicitationDesk | undefined },
  tool: string,
  err: UrlElicitationRequiredError,
  caller: Omit<CallerOf, "clock" | "tool"> | undefined,
  signal?: AbortSignal,
): Promise<McpResult | "retry"> {
  const pages: ElicitRequestURLParams[] = err.elicitations.slice(0, MAX_PAGES);
  const refused = (how: string): McpResult => ({
    text: `MCP server "${host.name}" needs the operator to finish a step in their browser before ${tool} can run (${cleanText(err.message, 300)}); ${how}. Nothing was run.`,
    isError: true,
    ran: false,
  });
  if (!host.desk || !caller) return refused("no person could be asked from here");
  if (pages.length === 0) return refused("the server named no page");
  for (const page of pages) {
    const why = urlProblem(page.url);
    if (why) return refused(`its page was not shown (${why})`);
    const a = await host.desk.ask(
      {
        sessionId: caller.session,
        callId: caller.callId,
        server: host.name,
        tool,
        mode: ElicitationMode.URL,
        message: cleanText(page.message, 4000),
        url: page.url,
        beforeRetry: true,
      },
      signal ?? new AbortController().signal,
    );
    if (a.action !== ElicitationAction.ACCEPT) {
      return refused(a.action === ElicitationAction.DECLINE ? "the operator declined" : "the operator did not answer");
    }
  }
  return "retry";
}

/** Why a page is not one to show a person: only http(s), no credentials in it, a sane length. */
function urlProblem(raw: string): string | undefined {
  if (raw.length > 2048) return "the URL is longer than 2,048 characters";
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return "not a URL";
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return `a ${u.protocol} URL, not a web page`;
  // https://bank.example@evil.example/ reads as the bank to a person and goes to evil.example.
  if (u.username || u.password) return "the URL has a user name or password before its host";
  return undefined;
}
