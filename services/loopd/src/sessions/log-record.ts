import type { DecisionName, PermissionMode } from "@boxmaker/common";

/**
 * What a session log holds, one JSON object per line. Messages are kept as
 * the exact JSON text that was (or will be) sent to the server, so replay can
 * splice them into a request without re-serializing a single byte.
 */
export type LogRecord =
  | { t: "session"; id: string; role: SessionRoleName; title: string; parent_id: string; slot: number; at: number }
  | { t: "epoch"; epoch: number; system_json: string; tools_json: string; summary_of_seq?: number; at: number }
  /**
   * `carried`: an earlier epoch's message repeated verbatim at the start of a new epoch by compaction.
   * `tool`: for a tool result, how the call was decided (kept beside the message, never sent).
   * `context_tokens`: for a model response, what the slot held after it (the server's count); logs
   * written before it was kept here have it on the turn's end only.
   * `interrupted`: a model response cut off mid-way (the turn was cancelled or ran out of wall
   * time): what the server had streamed, replayed as it is (interrupted-answer.ts).
   */
  | {
      t: "message";
      epoch: number;
      json: string;
      at: number;
      carried?: true;
      tool?: ToolMeta;
      context_tokens?: number;
      interrupted?: true;
    }
  | { t: "turn_start"; turn: number; at: number }
  | {
      t: "turn_end";
      turn: number;
      reason: string;
      at: number;
      cache_n?: number;
      prompt_n?: number;
      predicted_n?: number;
      context_tokens?: number;
    }
  /** Written by loopd 0.1 (test/fixtures/log-loopd-0.1.jsonl), no longer: read so its logs still load. */
  | { t: "usage"; context_tokens: number; at: number }
  /** Something the model is told at the start of the next turn (a late approval decision). */
  | { t: "note"; text: string; at: number }
  | { t: "archived"; at: number }
  | { t: "renamed"; title: string; at: number }
  /** The permission mode the session's later tool calls are decided under (until the next one). */
  | { t: "mode"; mode: PermissionMode; at: number };

export type SessionRoleName = "main" | "subagent" | "scheduled";

/** The decision behind a tool result, for history; the decision names match the wire's ToolDecision. */
export interface ToolMeta {
  decision: DecisionName;
  rule: string;
  is_error: boolean;
  proposal_id?: string;
  proposal_state?: string;
}
