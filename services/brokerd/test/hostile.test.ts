import { ToolDecision } from "@boxmaker/common";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { rig, type Rig } from "./helpers.js";
import { requires } from "../../../test/support/requirements.js";

// Two of these also run the hostile paths through run_command, which needs the sandbox.
const haveBwrap = requires("brokerd hostile paths through run_command", ["bwrap"]);

/** Every file under a directory with its content: compared before and after to prove nothing was touched. */
function snapshot(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(p, r);
      else out[r] = e.isSymbolicLink() ? `-> link` : readFileSync(p, "utf8");
    }
  };
  walk(dir, "");
  return out;
}

let r: Rig;
let before: Record<string, string>;

/** Every hostile call must be refused before anything runs, with a message that says why. */
async function refused(name: string, args: unknown, why: RegExp, session = "s1") {
  const res = await r.call(name, args, session);
  expect(res.decision, `${name} ${JSON.stringify(args)} → ${res.content}`).toBe(ToolDecision.DENIED);
  expect(res.isError).toBe(true);
  expect(res.content).toMatch(why);
  return res;
}

const seed = ({ ws, outside }: { ws: string; outside: string }) => {
  writeFileSync(join(outside, "victim.txt"), "original\n");
  mkdirSync(join(outside, "dir"));
  writeFileSync(join(ws, "ok.txt"), "fine\n");
};

beforeEach(async () => {
  // An operator who allows everything still cannot lift the hard path checks.
  r = await rig(
    {
      limits: { max_argument_bytes: 4096 },
      protected_paths: [],
      policy: { rules: [{ name: "yolo", tool: "*", effect: "allow" }] },
    },
    seed,
  );
  before = snapshot(r.outside);
});
afterEach(async () => {
  expect(snapshot(r.outside)).toEqual(before);
  await r.cleanup();
});

describe("hostile input", () => {
  it.skipIf(!haveBwrap)("refuses .. traversal for every path-taking tool", async () => {
    const out = /outside the workspace/;
    await refused("read_file", { path: "../outside/victim.txt" }, out);
    await refused("write_file", { path: "../outside/victim.txt", content: "pwned" }, out);
    await refused("write_file", { path: "sub/../../outside/new.txt", content: "pwned" }, out);
    await refused("edit_file", { path: "../outside/victim.txt", old_text: "original", new_text: "pwned" }, out);
    await refused("list_dir", { path: ".." }, out);
    await refused("search_files", { pattern: "original", path: "../outside" }, out);
    await refused("run_command", { command: "echo pwned > victim.txt", cwd: "../outside" }, out);
  });

  it("refuses absolute paths outside the workspace", async () => {
    await refused("read_file", { path: "/etc/passwd" }, /outside the workspace/);
    await refused("write_file", { path: join(r.outside, "victim.txt"), content: "pwned" }, /outside the workspace/);
    await refused("write_file", { path: join(r.outside, "fresh.txt"), content: "pwned" }, /outside the workspace/);
  });

  it.skipIf(!haveBwrap)(
    "refuses symlinks that lead out of the workspace, as a directory or as the file itself",
    async () => {
      symlinkSync(r.outside, join(r.ws, "escape"));
      symlinkSync(join(r.outside, "victim.txt"), join(r.ws, "victim-link.txt"));
      const esc = /symlink .*outside the workspace/;
      await refused("read_file", { path: "escape/victim.txt" }, esc);
      await refused("write_file", { path: "escape/new.txt", content: "pwned" }, esc);
      await refused("write_file", { path: "victim-link.txt", content: "pwned" }, esc);
      await refused("edit_file", { path: "victim-link.txt", old_text: "original", new_text: "pwned" }, esc);
      await refused("list_dir", { path: "escape" }, esc);
      await refused("run_command", { command: "touch pwned", cwd: "escape" }, esc);
      // search_files from the root walks past the links without following them.
      const s = await r.call("search_files", { pattern: "original" });
      expect(s.content).toMatch(/^no matches/);
    },
  );

  it("refuses an approval when a directory was swapped for a symlink after staging", async () => {
    r.config.policy.rules = []; // back to the defaults: writes ask
    mkdirSync(join(r.ws, "dir"));
    const res = await r.call("write_file", { path: "dir/victim.txt", content: "pwned" });
    expect(res.decision).toBe(ToolDecision.STAGED);
    rmSync(join(r.ws, "dir"), { recursive: true });
    symlinkSync(r.outside, join(r.ws, "dir"));
    const done = await r.broker.decideProposal(res.proposalId, true, "");
    expect(done.state).toBe("failed");
    expect(done.result).toMatch(/Not applied: Refused: dir\/victim.txt resolves through a symlink/);
  });

  it("refuses an approval when the file itself was swapped for a symlink (even to a file in the workspace)", async () => {
    r.config.policy.rules = [];
    writeFileSync(join(r.ws, "a.txt"), "base\n");
    writeFileSync(join(r.ws, "b.txt"), "base\n");
    const res = await r.call("write_file", { path: "a.txt", content: "new\n" });
    renameSync(join(r.ws, "a.txt"), join(r.ws, "a.old"));
    symlinkSync(join(r.ws, "b.txt"), join(r.ws, "a.txt"));
    const done = await r.broker.decideProposal(res.proposalId, true, "");
    expect(done.state).toBe("failed");
    expect(done.result).toMatch(/now resolves to .*b\.txt instead of .*a\.txt/);
    expect(readFileSync(join(r.ws, "b.txt"), "utf8")).toBe("base\n");
  });

  it("refuses secrets by name, for reading and writing, and never shows their content", async () => {
    writeFileSync(join(r.ws, ".env"), "TOKEN=hunter2\n");
    mkdirSync(join(r.ws, ".ssh"));
    writeFileSync(join(r.ws, ".ssh", "id_ed25519"), "KEY hunter2\n");
    mkdirSync(join(r.ws, ".aws"));
    writeFileSync(join(r.ws, ".aws", "credentials"), "hunter2\n");
    const secret = /looks like a secret/;
    await refused("read_file", { path: ".env" }, secret);
    await refused("read_file", { path: ".ssh/id_ed25519" }, secret);
    await refused("read_file", { path: ".aws/credentials" }, secret);
    await refused("write_file", { path: ".env.production", content: "X=1" }, secret);
    await refused("write_file", { path: "deploy/server.key", content: "k" }, secret);
    await refused("edit_file", { path: ".env", old_text: "hunter2", new_text: "x" }, secret);
    await refused("list_dir", { path: ".ssh" }, secret);
    symlinkSync(join(r.ws, ".env"), join(r.ws, "notes.txt"));
    await refused("read_file", { path: "notes.txt" }, secret);
    const s = await r.call("search_files", { pattern: "hunter2" });
    expect(s.content).not.toContain("hunter2\n");
    expect(s.content).toMatch(/^no matches/);
    expect(readFileSync(join(r.ws, ".env"), "utf8")).toBe("TOKEN=hunter2\n");
  });

  it("refuses writes to protected paths even when a rule allows everything", async () => {
    await r.cleanup();
    r = await rig(
      ({ ws }) => ({ protected_paths: [join(ws, ".boxmaker")], policy: { rules: [{ tool: "*", effect: "allow" }] } }),
      seed,
    );
    before = snapshot(r.outside);
    await refused("write_file", { path: ".boxmaker/config.json", content: "{}" }, /never writable/);
    await refused("edit_file", { path: "sub/../.boxmaker/x", old_text: "a", new_text: "b" }, /never writable/);
    expect(() => statSync(join(r.ws, ".boxmaker"))).toThrow();
  });

  it("refuses oversized arguments before parsing them", async () => {
    const res = await refused(
      "write_file",
      { path: "big.txt", content: "x".repeat(5000) },
      /above the 4096-byte limit/,
    );
    expect(res.rule).toBe("limit:argument-size");
    expect(() => statSync(join(r.ws, "big.txt"))).toThrow();
  });

  it("refuses arguments that are not JSON or not the schema's shape, saying what is expected", async () => {
    await refused("read_file", '{"path": "ok.txt"', /not valid JSON/);
    await refused("write_file", "path=ok.txt", /not valid JSON/);
    await refused("read_file", "[1,2]", /must be object/);
    await refused("read_file", '"ok.txt"', /must be object/);
    await refused("read_file", { path: 42 }, /path: must be string/);
    await refused(
      "read_file",
      { file: "ok.txt" },
      /missing required parameter "path".*unknown parameter "file"|unknown parameter "file".*missing required parameter "path"/,
    );
    await refused("read_file", { path: "ok.txt", start_line: 0 }, /start_line: must be >= 1/);
    await refused("call_tool", { name: "read_file" }, /missing required parameter "arguments"/);
    await refused("call_tool", '{"name": "read_file", "arguments": "{bad json"}', /arguments: must be object/);
  });

  it("refuses call_tool before find_tool, unknown tools, and extended tools called by name", async () => {
    await refused("call_tool", { name: "grep_blob", arguments: { blob: "x", pattern: "y" } }, /Call find_tool first/);
    await refused("call_tool", { name: "nope_tool", arguments: {} }, /no tool named "nope_tool".*find_tool/i);
    await refused(
      "call_tool",
      { name: "call_tool", arguments: { name: "read_file", arguments: {} } },
      /cannot call itself/,
    );
    await refused("grep_blob", { blob: "x", pattern: "y" }, /not one of your tools.*call_tool/);
    await refused("shell", { cmd: "rm -rf /" }, /not one of your tools.*find_tool/);
  });

  it("refuses run_command when no sandbox is available and unsandboxed runs are not allowed", async () => {
    await r.cleanup();
    r = await rig({ sandbox: { mode: "none" }, policy: { rules: [{ tool: "*", effect: "allow" }] } }, seed);
    before = snapshot(r.outside);
    const res = await refused(
      "run_command",
      { command: `echo pwned > ${join(r.outside, "victim.txt")}` },
      /unavailable/,
    );
    expect(res.rule).toBe("sandbox:unavailable");
  });
});
