import type { ToolMeta } from "./log-record.js";

/* Its own module so the epoch view and replay can name it without importing the state that holds them. */

export interface StoredMessage {
  epoch: number;
  /** The exact JSON text of the message, as sent to or received from the server. */
  json: string;
  at: number;
  /** Repeated from an earlier epoch by compaction; history shows it once. */
  carried?: true;
  tool?: ToolMeta;
  /** A model response cut off mid-way (log-record.ts). */
  interrupted?: true;
  /** What the request carries (replay.ts), for a message with tool calls; found once, when applied. */
  replay?: string;
}
