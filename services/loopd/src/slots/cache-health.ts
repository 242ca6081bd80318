/**
 * Live cache health: Σprompt_n over the tokens truly new, as the real-server
 * tests measure it (test/real/cache-reuse.test.ts). After a response the slot
 * holds its prompt and reply less the last token (the end-of-turn token is
 * sampled but never decoded); of the next request's prompt, what lies beyond
 * that is truly new, and any prompt_n beyond it was read again because an
 * earlier byte of the conversation was rendered differently or the cache was
 * gone. Kept per session and for the server; when reuse falls for
 * POOR_STREAK requests in a row the session gets one warning naming the
 * likely cause.
 *
 * Pure accounting: the runner feeds it each response's figures.
 */
import { create } from "@bufbuild/protobuf";
import { CacheHealthSchema, type CacheHealth as CacheHealthMessage } from "@boxmaker/common";

/** A request reads "poorly" when its prompt_n is above this many times its new tokens… */
const POOR_RATIO = 1.5;
/** …and by at least this many tokens (two tokens read for one new is noise, not a lost cache). */
const POOR_MIN_EXTRA = 32;
/** Poor requests in a row before the person is told. */
export const POOR_STREAK = 3;

type CacheCause = "template" | "slot_taken" | "server_restarted" | "history";

/** One response, as loopd sees it. */
export interface ResponseFacts {
  sessionId: string;
  slot: number;
  /** The session's epoch: a compaction starts a new prompt, so nothing carries over. */
  epoch: number;
  cacheN: number;
  promptN: number;
  predictedN: number;
  /** inferproxy's template probe says the template is not prefix-stable (FinalMessage.template_warning). */
  templateWarning: string;
}

interface CacheHealthFigures {
  requests: number;
  promptN: bigint;
  newTokens: bigint;
  ratio: number;
  lastRatio: number;
  poorStreak: number;
  warning: string;
}

export interface CacheWarningFacts {
  cause: CacheCause;
  message: string;
  ratio: number;
  requests: number;
}

class Tally {
  requests = 0;
  promptN = 0;
  newTokens = 0;
  lastRatio = 0;
  poorStreak = 0;
  warning = "";

  add(promptN: number, fresh: number): boolean {
    this.requests++;
    this.promptN += promptN;
    this.newTokens += fresh;
    this.lastRatio = promptN / fresh;
    const poor = promptN > POOR_RATIO * fresh && promptN - fresh >= POOR_MIN_EXTRA;
    this.poorStreak = poor ? this.poorStreak + 1 : 0;
    return poor;
  }

  figures(): CacheHealthFigures {
    return {
      requests: this.requests,
      promptN: BigInt(this.promptN),
      newTokens: BigInt(this.newTokens),
      ratio: this.newTokens > 0 ? this.promptN / this.newTokens : 0,
      lastRatio: this.lastRatio,
      poorStreak: this.poorStreak,
      warning: this.warning,
    };
  }
}

interface SessionMeter {
  tally: Tally;
  /** What the slot held after this session's last response, in which epoch and on which slot. */
  held?: { tokens: number; epoch: number; slot: number };
  /** Figures of the poor streak under way: read, new, and what points at a cause. */
  streak: { promptN: number; fresh: number; slotTaken: boolean; coldCache: boolean; template: string };
}

const emptyStreak = () => ({ promptN: 0, fresh: 0, slotTaken: false, coldCache: false, template: "" });

export class CacheHealth {
  private readonly sessions = new Map<string, SessionMeter>();
  private readonly server = new Tally();
  /** The session whose request a slot served last: another one in between means the slot was taken. */
  private readonly lastOnSlot = new Map<number, string>();

  /** Records one response; returns the session's warning when this response makes it due (once per session). */
  record(f: ResponseFacts): CacheWarningFacts | undefined {
    const m = this.meter(f.sessionId);
    const prev = m.held;
    const slotTaken = (this.lastOnSlot.get(f.slot) ?? f.sessionId) !== f.sessionId;
    this.lastOnSlot.set(f.slot, f.sessionId);
    m.held = { tokens: f.cacheN + f.promptN + f.predictedN - 1, epoch: f.epoch, slot: f.slot };
    // Nothing to measure against: the session's first request, a new epoch, or a move to another slot.
    if (!prev || prev.epoch !== f.epoch || prev.slot !== f.slot) return undefined;
    const fresh = f.cacheN + f.promptN - prev.tokens;
    // A prompt no longer than what was held: something was taken out (a cut-off reply sent again), not grown.
    if (fresh <= 0) return undefined;
    this.server.add(f.promptN, fresh);
    const poor = m.tally.add(f.promptN, fresh);
    if (!poor) {
      m.streak = emptyStreak();
      return undefined;
    }
    const s = m.streak;
    s.promptN += f.promptN;
    s.fresh += fresh;
    s.slotTaken ||= slotTaken;
    s.coldCache ||= f.cacheN === 0;
    s.template ||= f.templateWarning;
    if (m.tally.poorStreak < POOR_STREAK || m.tally.warning) return undefined;
    const w = warningFor(s, f.slot);
    m.tally.warning = w.message;
    return w;
  }

  ofSession(id: string): CacheHealthMessage {
    return create(CacheHealthSchema, this.meter(id).tally.figures());
  }

  ofServer(): CacheHealthMessage {
    return create(CacheHealthSchema, this.server.figures());
  }

  /** A deleted session's figures go; the server's stay. */
  forget(id: string): void {
    this.sessions.delete(id);
  }

  private meter(id: string): SessionMeter {
    let m = this.sessions.get(id);
    if (!m) {
      m = { tally: new Tally(), streak: emptyStreak() };
      this.sessions.set(id, m);
    }
    return m;
  }
}

/** The likely cause, most specific first: what the probe found, then what loopd saw, then the history. */
function causeOf(s: SessionMeter["streak"]): CacheCause {
  if (s.template) return "template";
  if (s.slotTaken) return "slot_taken";
  if (s.coldCache) return "server_restarted";
  return "history";
}

function warningFor(s: SessionMeter["streak"], slot: number): CacheWarningFacts {
  const ratio = s.promptN / s.fresh;
  const cause = causeOf(s);
  const why = {
    template: `the chat template: ${s.template}; \`boxmaker doctor\` shows the probe`,
    slot_taken: `another session took slot ${slot} between this session's requests and its cache was not brought back (is parking off?)`,
    server_restarted: "llama-server restarted or its cache was cleared (cache_n 0)",
    history:
      "the history sent changed: an earlier message was not sent byte for byte as the server saw it, or the template renders earlier turns differently",
  }[cause];
  return {
    cause,
    ratio,
    requests: POOR_STREAK,
    message:
      `prompt cache reuse fell: the last ${POOR_STREAK} requests read ${ratio.toFixed(1)}× their new tokens ` +
      `(Σprompt_n ${s.promptN} for ${s.fresh} new); likely cause: ${why}`,
  };
}
