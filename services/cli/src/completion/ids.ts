import type { LoopClient } from "../connection.js";
import type { Candidate } from "./candidates.js";
import type { IdKind } from "./value-kinds.js";

/** Sessions offered at a TAB: the most recently active, enough to find one, not a year of them. */
const SESSIONS_OFFERED = 200;

/** The ids of `kind` loopd knows that start with `prefix`, the most recent first, each with a line saying which it is. */
export async function idCandidates(client: LoopClient, kind: IdKind, prefix: string): Promise<Candidate[]> {
  const all = await listed(client, kind);
  return all.filter((c) => c.value.startsWith(prefix));
}

async function listed(client: LoopClient, kind: IdKind): Promise<Candidate[]> {
  switch (kind) {
    case "sessions": {
      // Archived sessions too (show, export, rm take them), after the live ones: a TAB finds today's work first.
      const { sessions } = await client.listSessions({ includeArchived: true, limit: SESSIONS_OFFERED });
      const rank = (s: (typeof sessions)[number]) => (s.state === "archived" ? 1 : 0);
      sessions.sort((a, b) => rank(a) - rank(b) || Number(b.updatedUnixMs - a.updatedUnixMs));
      return sessions.map((s) => ({ value: s.id, description: oneLine(`${s.title || "(untitled)"} · ${s.state}`) }));
    }
    case "proposals": {
      const { proposals } = await client.listProposals({ includeDecided: false, sessionId: "" });
      proposals.sort((a, b) => Number(b.createdUnixMs - a.createdUnixMs));
      return proposals.map((p) => ({ value: p.id, description: oneLine(`${p.tool} ${p.preview.split("\n")[0]}`) }));
    }
    case "schedules": {
      const { schedules } = await client.listSchedules({});
      return schedules.map((s) => ({ value: s.id, description: oneLine(`${s.cron} ${s.prompt}`) }));
    }
  }
}

// A description is the rest of one `value<TAB>description` line: a title or a preview (model-written) may
// hold tabs and newlines that would split it. Control characters are made visible where it is written.
const oneLine = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 70 ? `${flat.slice(0, 69)}…` : flat;
};
