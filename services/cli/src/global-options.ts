import type { PermissionMode } from "@boxmaker/common/lite";
import type { SocketChoice } from "./socket-choice.js";

export interface GlobalOptions {
  /** Which socket, and why; settled on first use, since finding the stack `up` runs means asking its socket. */
  socket: () => Promise<SocketChoice>;
  /** Where `boxmaker up` records its stack, so an error can name the stack that runs. */
  stackRecord?: string;
  /** --timeout: how long a call may wait for loopd's answer; undefined: the client's defaults. */
  timeoutMs?: number | undefined;
  /** cli.json's "mode": run's and chat's mode for a new session when --mode is not given. */
  mode?: PermissionMode | undefined;
  /** false with --no-pager: long output on a terminal is printed as it is, not paged (pager.ts). */
  pager?: boolean | undefined;
}
