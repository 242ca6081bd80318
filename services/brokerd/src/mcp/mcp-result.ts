import type { ToolText } from "../tool-table.js";

/**
 * What a call produced; `ran` is false when the server never ran it (down, refused, timed out).
 * Its own module so the call and the elicitation steps need not import the connection that runs them.
 */
export interface McpResult extends ToolText {
  ran: boolean;
}
