export interface GlobalOptions {
  socket: string;
  /** --timeout: how long a call may wait for loopd's answer; undefined: the client's defaults. */
  timeoutMs?: number | undefined;
}
