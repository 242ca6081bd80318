/**
 * The environment `up` gives the daemons: what a Node service needs to run,
 * never the rest of the person's shell. A shell holds tokens (AWS_SECRET_ACCESS_KEY,
 * GITHUB_TOKEN, …); a daemon needs none of them, and a command brokerd runs
 * unsandboxed can read its parent's environment through /proc/<pid>/environ.
 * llama-server is not given this one: GPU runtimes read their own variables.
 */
const KEEP = new Set(["PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "SSL_CERT_FILE", "SSL_CERT_DIR"]);
const KEEP_PREFIXES = ["LC_", "XDG_", "NODE_", "BOXMAKER_"];

export function daemonEnvironment(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && (KEEP.has(k) || KEEP_PREFIXES.some((p) => k.startsWith(p)))) out[k] = v;
  }
  // No NOTIFY_SOCKET: there is no systemd to tell (see readiness.ts).
  out.NOTIFY_SOCKET = "";
  return out;
}
