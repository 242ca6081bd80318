/**
 * The sandbox's side of the proxy. A command keeps its empty network namespace (only
 * `lo`, which bwrap brings up); curl, npm, pip and git take a proxy only as host:port, so
 * socat listens on the namespace's own 127.0.0.1 and carries each connection to the
 * proxy's Unix socket, bound in. socat is a plain relay: everything is decided on
 * brokerd's side of the socket, so a command that kills or replaces it reaches nothing more.
 */

/** Where the proxy's socket appears inside the sandbox (bwrap makes the directory on its tmpfs root). */
const SANDBOX_SOCKET = "/run/boxmaker-net/proxy.sock";

export interface Bridge {
  /** The proxy's socket for this command, on the host. */
  socket: string;
  socat: string;
  port: number;
}

export function bridgeArgs(b: Bridge): string[] {
  const url = `http://127.0.0.1:${b.port}`;
  // socks5h: names go to the proxy unresolved; the sandbox has no DNS, and the proxy judges the name.
  const socks = `socks5h://127.0.0.1:${b.port}`;
  const env: Record<string, string> = {
    http_proxy: url,
    https_proxy: url,
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    all_proxy: socks,
    ALL_PROXY: socks,
    npm_config_proxy: url,
    npm_config_https_proxy: url,
  };
  return ["--ro-bind", b.socket, SANDBOX_SOCKET, ...Object.entries(env).flatMap(([k, v]) => ["--setenv", k, v])];
}

/**
 * Shell run before the command: socat in the background, then a wait until its port is
 * listening (read from the namespace's /proc/net/tcp, so the probe itself opens no
 * connection the proxy would audit). A bridge that does not come up fails the run.
 */
export function bridgePrelude(b: Bridge): string {
  const hexPort = b.port.toString(16).toUpperCase().padStart(4, "0");
  return (
    `${b.socat} TCP-LISTEN:${b.port},bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:${SANDBOX_SOCKET} </dev/null >/dev/null 2>&1 & ` +
    `i=0; until grep -q ' 0100007F:${hexPort} 00000000:0000 0A ' /proc/net/tcp 2>/dev/null; do ` +
    `i=$((i+1)); [ "$i" -gt 1000 ] && { echo "boxmaker: the network bridge (socat) did not start" >&2; exit 126; }; sleep 0.01; done; `
  );
}
