import { BoxmakerError, Status } from "@boxmaker/common";

/**
 * A login step that cannot be taken, in the person's words, with the gRPC
 * status the CLI maps. Its own module: brokerd's service imports it at start,
 * and the MCP SDK (oauth-login.ts) must stay unloaded until a server needs it.
 */
export class McpLoginError extends BoxmakerError {
  constructor(message: string, status: Status = Status.FAILED_PRECONDITION) {
    super("MCP_LOGIN", message, { status });
  }
}
