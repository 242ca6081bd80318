import { randomUUID } from "node:crypto";
import {
  AsyncQueue,
  BoxmakerError,
  ElicitationAction,
  ElicitationMode,
  Status,
  checkFormContent,
  formFields,
  type FormField,
} from "@boxmaker/common";

/**
 * How long a server's question waits for the person before the server is
 * told cancel: as long as the reference servers wait for an answer (10 min).
 */
export const ELICITATION_WAIT_MS = 10 * 60_000;

/** What a server asked, as the person will be shown it. */
export interface Question {
  sessionId: string;
  callId: string;
  server: string;
  tool: string;
  mode: ElicitationMode;
  message: string;
  /** Form: the schema as the server sent it. */
  requestedSchema?: unknown;
  url?: string;
  beforeRetry?: boolean;
}

/** The answer that goes back to the server. */
export interface Answer {
  action: ElicitationAction;
  content?: Record<string, unknown>;
}

export type DeskEvent =
  | { case: "asked"; value: Question & { id: string; expiresAtUnixMs: number } }
  | { case: "ended"; value: { id: string; action: ElicitationAction; why: string } };

interface Open {
  question: Question & { id: string; expiresAtUnixMs: number };
  fields?: FormField[];
  settle: (a: Answer, why: string) => void;
}

interface Watcher {
  sessionId: string;
  callId: string;
  queue: AsyncQueue<DeskEvent>;
}

/** An answer that cannot be taken: the question is gone, or the content does not fit. */
class ElicitationAnswerError extends BoxmakerError {
  constructor(message: string, status: Status) {
    super("ELICITATION_ANSWER", message, { status });
  }
}

/**
 * The questions MCP servers are waiting on a person for, by session and call.
 * A question waits for an answer from the person's terminal (through loopd),
 * for its time limit, or for its call to end, whichever comes first, and
 * each end is told to whoever watches: a second terminal following the
 * session drops the question the first one answered.
 */
export class ElicitationDesk {
  private readonly open = new Map<string, Open>();
  private readonly watchers = new Set<Watcher>();

  constructor(
    /** How long a person has to answer before the server is told cancel. */
    private readonly waitMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Asks the person; resolves with the answer for the server, never rejects. */
  ask(q: Question, signal: AbortSignal): Promise<Answer> {
    const id = `e-${randomUUID().slice(0, 8)}`;
    const fields = q.mode === ElicitationMode.FORM ? formFields(q.requestedSchema) : undefined;
    if (fields && "error" in fields) return Promise.resolve({ action: ElicitationAction.DECLINE });
    const question = { ...q, id, expiresAtUnixMs: this.now() + this.waitMs };
    return new Promise<Answer>((resolve) => {
      const timer = setTimeout(() => settle({ action: ElicitationAction.CANCEL }, "timed out"), this.waitMs);
      timer.unref();
      const onAbort = () => settle({ action: ElicitationAction.CANCEL }, "call ended");
      const settle = (a: Answer, why: string) => {
        if (!this.open.delete(id)) return;
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        this.tell(question, { case: "ended", value: { id, action: a.action, why } });
        resolve(a);
      };
      this.open.set(id, { question, ...(fields ? { fields: fields.fields } : {}), settle });
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      this.tell(question, { case: "asked", value: question });
    });
  }

  /** A person's answer; the content of an accepted form must fit it, else nothing is sent. */
  answer(sessionId: string, id: string, action: ElicitationAction, contentJson: string): void {
    const o = this.open.get(id);
    if (!o || o.question.sessionId !== sessionId) {
      throw new ElicitationAnswerError(
        `no open question ${id} in session ${sessionId} (answered, timed out or its call ended)`,
        Status.NOT_FOUND,
      );
    }
    if (action === ElicitationAction.UNSPECIFIED) {
      throw new ElicitationAnswerError("an answer must accept, decline or cancel", Status.INVALID_ARGUMENT);
    }
    if (action !== ElicitationAction.ACCEPT || !o.fields) {
      o.settle({ action }, "answered");
      return;
    }
    let content: unknown;
    try {
      content = JSON.parse(contentJson || "{}");
    } catch {
      throw new ElicitationAnswerError("the answer's content is not JSON", Status.INVALID_ARGUMENT);
    }
    const checked = checkFormContent(o.fields, content);
    if ("error" in checked) throw new ElicitationAnswerError(checked.error, Status.INVALID_ARGUMENT);
    o.settle({ action, content: checked.content }, "answered");
  }

  /** The open questions of a session (one call's when `callId` is set), then each new one and each end. */
  watch(sessionId: string, callId: string, signal: AbortSignal): AsyncIterable<DeskEvent> {
    const queue = new AsyncQueue<DeskEvent>();
    const w: Watcher = { sessionId, callId, queue };
    for (const o of this.open.values()) if (this.wants(w, o.question)) queue.push({ case: "asked", value: o.question });
    this.watchers.add(w);
    const stop = () => {
      this.watchers.delete(w);
      queue.close();
    };
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
    return queue;
  }

  /** Open questions, for status. */
  get size(): number {
    return this.open.size;
  }

  private wants(w: Watcher, q: Question): boolean {
    return w.sessionId === q.sessionId && (w.callId === "" || w.callId === q.callId);
  }

  private tell(q: Question, e: DeskEvent): void {
    for (const w of this.watchers) if (this.wants(w, q)) w.queue.push(e);
  }
}
