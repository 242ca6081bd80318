import { BoxmakerError, Status } from "@boxmaker/common";

/**
 * brokerd's own failures, each with a fixed code. Most never leave the
 * process: a tool call's failure becomes the call's text result. The status
 * matters for the few that reach a gRPC reply (proposal decisions).
 */

/** A mistake the model can fix (bad arguments, no match for edit_file): its message is the tool result. */
export class ToolError extends BoxmakerError {
  constructor(message: string, options?: ErrorOptions) {
    super("TOOL_INVALID_CALL", message, { ...options, status: Status.INVALID_ARGUMENT });
  }
}

/** The walk met a file where the path needs a directory (ENOTDIR): a ToolError a lister can tell apart. */
export class NotADirectory extends ToolError {}

/**
 * A hard refusal that no policy rule can turn into allow (outside the
 * workspace, a secret, a protected path, no sandbox). `rule` names the check
 * for the audit trail; the message is for the model and says what to do.
 */
export class Refused extends BoxmakerError {
  constructor(
    readonly rule: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super("TOOL_REFUSED", message, { ...options, status: Status.PERMISSION_DENIED });
  }
}

/** A person decided a proposal that does not exist. */
export class ProposalNotFound extends BoxmakerError {
  constructor(id: string) {
    super("PROPOSAL_NOT_FOUND", `no proposal ${id}`, { status: Status.NOT_FOUND });
  }
}

/** A person decided a proposal that is decided already, or being decided right now. */
/** One line: why a proposal cannot be decided (any more). */
function notPendingText(id: string, state: string): string {
  if (state === "pending") return `proposal ${id} is already being decided`;
  if (state === "withdrawn")
    return `proposal ${id} was withdrawn when the turn that staged it was cancelled; it cannot be approved — ask the model to stage it again`;
  return `proposal ${id} is already ${state}`;
}

export class ProposalNotPending extends BoxmakerError {
  constructor(id: string, state: string) {
    super("PROPOSAL_NOT_PENDING", notPendingText(id, state), {
      status: Status.FAILED_PRECONDITION,
    });
  }
}

/** Two tools under one name, or a core tool added after the array was fixed: a programming or config mistake. */
export class ToolTableError extends BoxmakerError {
  constructor(message: string) {
    super("TOOL_TABLE_CONFLICT", message, { status: Status.INTERNAL });
  }
}

/** An MCP step (connect, call, close) that did not finish in time on our own clock. */
export class McpTimeout extends BoxmakerError {
  constructor(what: string, ms: number) {
    super("MCP_TIMEOUT", `${what} took longer than ${ms} ms`, { status: Status.DEADLINE_EXCEEDED });
  }
}

/** A sandboxed stdio MCP server with no sandbox to run in. */
export class McpNoSandbox extends BoxmakerError {
  constructor(detail: string) {
    super(
      "MCP_NO_SANDBOX",
      `no sandbox is available (${detail}); set "sandbox": false on this server to run it unsandboxed`,
      { status: Status.FAILED_PRECONDITION },
    );
  }
}

/** A proposal file that does not hold a proposal record (moved to quarantine). */
export class BadProposalFile extends BoxmakerError {
  constructor() {
    super("PROPOSAL_FILE_INVALID", "not a proposal record", { status: Status.DATA_LOSS });
  }
}
