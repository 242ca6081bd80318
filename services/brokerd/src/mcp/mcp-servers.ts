import type { McpConnection } from "./connection.js";
import type { ElicitationDesk } from "./elicitation-desk.js";

/*
 * What the broker asks of its MCP servers, apart from servers.ts so manager.ts,
 * which servers.ts loads lazily, can implement it without importing its loader.
 */

export interface McpPromptInfo {
  server: string;
  name: string;
  description: string;
  arguments: Array<{ name: string; description: string; required: boolean }>;
}

/** The configured MCP servers, as the broker uses them (McpManager when there are any). */
export interface McpServers {
  readonly connections: readonly McpConnection[];
  /** The servers' open questions for people (elicitation), watched and answered through loopd. */
  readonly questions: ElicitationDesk;
  start(): void;
  settled(): Promise<void>;
  get(name: string): McpConnection | undefined;
  prompts(signal: AbortSignal): Promise<McpPromptInfo[]>;
  status(): string[];
  close(): Promise<void>;
}
