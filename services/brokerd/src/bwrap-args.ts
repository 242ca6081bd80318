import type { SandboxLimits } from "./config-types.js";
import { type Bridge, bridgeArgs, bridgePrelude } from "./net-proxy/bridge.js";

/*
 * The sandbox's command line: what bwrap is told to bind, mask and unshare,
 * and the shell that sets the rlimits before the command runs. Pure, so its
 * shape is tested without running anything.
 */

export interface BwrapLayout {
  /** System paths exposed read-only; a symlink on the host stays a symlink (usr-merged /bin). */
  ro: Array<{ path: string; symlinkTo?: string }>;
  /** Workspace roots, writable. */
  rw: string[];
  /** Protected paths inside a root, bound read-only over it. */
  roInside: string[];
  /** Secrets inside a root, masked: files by /dev/null, directories by an empty tmpfs. */
  hidden: { path: string; dir: boolean }[];
  /** Protected workspace paths that exist (git's directory, dotfiles, AGENTS.md…), bound read-only. */
  readOnly?: string[];
  /** Directories bound onto themselves so they cannot be renamed (the parents of the above). */
  pinned?: string[];
  /** When set, only these directories of the roots are there (read-write); the rest of each root is empty. */
  writable?: string[];
  network: boolean;
  cwd: string;
  command: string;
  /** Kernel limits set (ulimit) before `command` runs; absent: none. */
  limits?: SandboxLimits;
  /** A program to run directly instead of `/bin/sh -c command` (an MCP server over stdio). */
  argv?: string[];
  /** The network proxy's bridge: its socket bound in, the proxy variables set, socat started first. */
  bridge?: Bridge;
}

/** The bwrap command line, pure so its shape is tested without running anything. */
export function bwrapArgs(l: BwrapLayout): string[] {
  const a = [
    "--die-with-parent",
    "--new-session",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--cap-drop",
    "ALL",
  ];
  if (!l.network) a.push("--unshare-net");
  for (const r of l.ro) {
    if (r.symlinkTo !== undefined) a.push("--symlink", r.symlinkTo, r.path);
    else a.push("--ro-bind", r.path, r.path);
  }
  if (l.network)
    a.push("--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf", "--ro-bind-try", "/etc/hosts", "/etc/hosts");
  // /tmp comes before the workspace so a workspace under /tmp is not hidden by the tmpfs.
  a.push("--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp");
  const inWritable = visibleIn(l.writable);
  // A rule's paths confine the command to what they name, reading as well as writing: the roots are
  // empty directories and only the named ones are bound in. A path outside them (`cat ../private/x`,
  // a hard link to it) is not there to open, whatever name the command finds for it.
  for (const r of l.rw) a.push(...(l.writable ? ["--dir", r] : ["--bind", r, r]));
  for (const w of l.writable ?? []) a.push("--bind-try", w, w);
  // Outermost first: a pinned parent bound after its child's mount would not cover it. `-try`: a path
  // that vanished between the scan and the start (or a protected path not created yet) skips its bind
  // instead of failing every command. Outside a rule's paths there is nothing to protect or mask.
  for (const d of (l.pinned ?? []).filter(inWritable)) a.push("--bind-try", d, d);
  for (const p of l.roInside.filter(inWritable)) a.push("--ro-bind-try", p, p);
  for (const p of (l.readOnly ?? []).filter(inWritable)) a.push("--ro-bind-try", p, p);
  for (const h of l.hidden.filter((x) => inWritable(x.path)))
    a.push(...(h.dir ? ["--tmpfs", h.path] : ["--ro-bind", "/dev/null", h.path]));
  if (l.bridge) a.push(...bridgeArgs(l.bridge));
  a.push("--chdir", l.cwd, "--", ...(l.argv ?? shellArgv(l.command, l.limits, l.bridge && bridgePrelude(l.bridge))));
  return a;
}

/** Whether a workspace path is there for the command: all of it, or only what a rule's `paths` name. */
export const visibleIn =
  (writable: string[] | undefined) =>
  (p: string): boolean =>
    !writable || writable.some((w) => p === w || p.startsWith(`${w}/`));

/**
 * `/bin/sh -c command`, with the rlimits set first by a wrapper shell that then
 * execs the command's shell: processes (`-p` in dash, `-u` in bash), data
 * segment, file size, open files. A limit the shell cannot set fails the run.
 */
export function shellArgv(command: string, limits?: SandboxLimits, prelude = ""): string[] {
  if (!limits)
    return prelude ? ["/bin/sh", "-c", `${prelude}exec /bin/sh -c "$1"`, "sh", command] : ["/bin/sh", "-c", command];
  const kb = (b: number) => Math.max(1, Math.floor(b / 1024));
  const blocks = (b: number) => Math.max(1, Math.floor(b / 512));
  // The prelude (the network bridge) runs before the limits: they are the command's, not brokerd's relay's.
  const script =
    prelude +
    `{ ulimit -p ${limits.max_processes} 2>/dev/null || ulimit -u ${limits.max_processes}; } && ` +
    `ulimit -d ${kb(limits.max_memory_bytes)} && ulimit -f ${blocks(limits.max_file_bytes)} && ulimit -n ${limits.max_open_files} ` +
    `|| { echo "boxmaker: cannot set the sandbox's resource limits" >&2; exit 126; }; exec /bin/sh -c "$1"`;
  return ["/bin/sh", "-c", script, "sh", command];
}
