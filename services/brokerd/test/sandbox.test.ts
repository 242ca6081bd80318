import { ToolDecision } from "@boxmaker/common";
import { afterEach, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bwrapArgs } from "../src/sandbox.js";
import { rig, type Rig } from "./helpers.js";
import { requires } from "../../../test/support/requirements.js";

let r: Rig;
afterEach(async () => r && (await r.cleanup()));

const allowCommands = { policy: { rules: [{ name: "cmds", tool: "run_command", effect: "allow" }] } };

describe("bwrap command line", () => {
  const base = {
    ro: [{ path: "/usr" }, { path: "/bin", symlinkTo: "usr/bin" }],
    rw: ["/tmp/ws"],
    roInside: ["/tmp/ws/.boxmaker"],
    hidden: [],
    cwd: "/tmp/ws",
    command: "make",
  };

  it("unshares the network unless policy allows it, and always the pid namespace", () => {
    const a = bwrapArgs({ ...base, network: false });
    expect(a).toContain("--unshare-net");
    expect(a).toContain("--unshare-pid");
    expect(a).toContain("--die-with-parent");
    expect(bwrapArgs({ ...base, network: true })).not.toContain("--unshare-net");
  });

  it("mounts the system read-only, the workspace writable after /tmp, protected paths read-only over it", () => {
    const a = bwrapArgs({ ...base, network: false }).join(" ");
    expect(a).toContain("--ro-bind /usr /usr");
    expect(a).toContain("--symlink usr/bin /bin");
    expect(a.indexOf("--tmpfs /tmp")).toBeLessThan(a.indexOf("--bind /tmp/ws /tmp/ws"));
    expect(a.indexOf("--bind /tmp/ws /tmp/ws")).toBeLessThan(
      a.indexOf("--ro-bind-try /tmp/ws/.boxmaker /tmp/ws/.boxmaker"),
    );
    expect(a.endsWith("--chdir /tmp/ws -- /bin/sh -c make")).toBe(true);
  });
});

describe.skipIf(!requires("brokerd run_command in the bwrap sandbox", ["bwrap"]))("run_command in bwrap", () => {
  it("can write the workspace but nothing outside it, has no network and a clean environment", async () => {
    process.env.BX_TEST_SECRET = "hunter2";
    r = await rig(allowCommands);
    expect(r.broker.sandbox.state).toBe("bwrap");
    const res = await r.call("run_command", {
      command: `echo made > made.txt; echo x > ${join(r.outside, "escape.txt")}; cat /proc/net/dev | tail -n +3 | cut -d: -f1; env`,
    });
    expect(res.decision).toBe(ToolDecision.ALLOWED);
    expect(readFileSync(join(r.ws, "made.txt"), "utf8")).toBe("made\n");
    expect(readdirSync(r.outside)).toEqual([]);
    expect(res.content).toMatch(/escape\.txt: (No such file or directory|Read-only file system|Directory nonexistent)/);
    expect(
      res.content
        .split("\n")
        .filter((l) => /^\s*(lo|eth\d|en\w+|wl\w+)$/.test(l))
        .map((l) => l.trim()),
    ).toEqual(["lo"]);
    expect(res.content).not.toContain("hunter2");
    expect(res.content).toContain("HOME=/tmp");
    expect(res.content).toMatch(/\[exit code 0\]$/);
    delete process.env.BX_TEST_SECRET;
  });

  it("reports a failing command's exit code as an error result", async () => {
    r = await rig(allowCommands);
    const res = await r.call("run_command", { command: "echo oops >&2; exit 3" });
    expect(res).toMatchObject({ decision: ToolDecision.ALLOWED, isError: true });
    expect(res.content).toBe("oops\n[exit code 3]");
  });

  it("masks secret files and directories inside the workspace from commands", async () => {
    r = await rig(allowCommands, ({ ws }) => {
      writeFileSync(join(ws, ".env"), "API_KEY=hunter2\n");
      mkdirSync(join(ws, "sub", ".ssh"), { recursive: true });
      writeFileSync(join(ws, "sub", ".ssh", "id_ed25519"), "PRIVATE KEY\n");
      writeFileSync(join(ws, "notes.txt"), "visible\n");
    });
    const res = await r.call("run_command", { command: "cat notes.txt; cat .env; ls -A sub/.ssh; echo end" });
    expect(res.content).toContain("visible");
    expect(res.content).not.toContain("hunter2");
    expect(res.content).not.toContain("id_ed25519");
    expect(res.content).toContain("end");
    // Writing through the mask changes nothing on disk.
    await r.call("run_command", { command: "echo leaked > .env || true" });
    expect(readFileSync(join(r.ws, ".env"), "utf8")).toBe("API_KEY=hunter2\n");
  });

  it("keeps protected paths inside the workspace read-only", async () => {
    r = await rig(
      ({ ws }) => ({ ...allowCommands, protected_paths: [join(ws, ".boxmaker")] }),
      ({ ws }) => mkdirSync(join(ws, ".boxmaker")),
    );
    const res = await r.call("run_command", { command: "echo x > .boxmaker/config.json" });
    expect(res.isError).toBe(true);
    expect(res.content).toMatch(/Read-only file system/);
    expect(existsSync(join(r.ws, ".boxmaker", "config.json"))).toBe(false);
  });

  it("kills a command at the time limit and caps its output", async () => {
    r = await rig({ ...allowCommands, sandbox: { timeout_ms: 300, output_cap_bytes: 1000 } });
    const slow = await r.call("run_command", { command: "sleep 30" });
    expect(slow.content).toMatch(/killed: the time limit of 300 ms was reached/);
    const loud = await r.call("run_command", { command: "head -c 100000 /dev/zero | tr '\\0' x" });
    expect(loud.content).toMatch(/output cap reached: 99000 further bytes were dropped/);
  });

  it("runs unsandboxed only when the config says so", async () => {
    r = await rig({ ...allowCommands, sandbox: { mode: "none", allow_unsandboxed: true } });
    expect(r.broker.sandbox.state).toBe("unsandboxed");
    expect((await r.call("run_command", { command: "pwd" })).content).toBe(`${r.broker.guard.roots[0]}\n[exit code 0]`);
  });

  it("stages commands by default, with the command line as the preview, and runs them on approval", async () => {
    r = await rig();
    const res = await r.call("run_command", { command: "echo approved > a.txt" });
    expect(res.decision).toBe(ToolDecision.STAGED);
    const p = r.broker.listProposals("s1", false)[0]!;
    expect(p.preview).toMatch(/^\$ echo approved > a\.txt\n/);
    expect(existsSync(join(r.ws, "a.txt"))).toBe(false);
    const done = await r.broker.decideProposal(p.id, true, "");
    expect(done).toMatchObject({ state: "applied", result: "[exit code 0]" });
    expect(readFileSync(join(r.ws, "a.txt"), "utf8")).toBe("approved\n");
  });
});
