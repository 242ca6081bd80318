import fc from "fast-check";
import { ToolDecision } from "@boxmaker/common";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rig, type Rig } from "../helpers.js";
import { requires } from "../../../../test/support/requirements.js";
import { tempDir } from "../../../../test/support/tmp.js";

/*
 * A hostile model writing a git config file git reads from outside the
 * repository: the person's global config (`~/.gitconfig`,
 * `$XDG_CONFIG_HOME/git/config`, `GIT_CONFIG_GLOBAL`) or a file a config's
 * `include.path` / `includeIf` names, with a `core.fsmonitor` that runs at the
 * person's next `git status` and a `core.hooksPath` that runs at a commit. The
 * oracle is the person's own git, with the environment brokerd had: the
 * payload touches a marker outside the workspace, which must never appear.
 */

let r: Rig | undefined;
const savedEnv = { ...process.env };
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
  for (const k of ["HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"])
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
});

const hasGit = requires("the git config tests (real git)", ["git"]);
const hasBwrap = requires("the git config tests (bwrap)", ["bwrap"]);

function gitRepo(ws: string): void {
  execFileSync("git", ["init", "-q", ws]);
  execFileSync("git", [
    "-C",
    ws,
    "-c",
    "user.email=a@b",
    "-c",
    "user.name=a",
    "commit",
    "-qm",
    "init",
    "--allow-empty",
  ]);
}

/** The person's git in the workspace, with the environment brokerd runs with (their HOME and git variables). */
function personRunsGit(ws: string): void {
  const env = { ...process.env, GIT_CONFIG_NOSYSTEM: "1" };
  for (const args of [["status"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x", "--allow-empty"]])
    try {
      execFileSync("git", args, { cwd: ws, stdio: "ignore", timeout: 20_000, env });
    } catch {
      /* what matters is whether planted code ran */
    }
}

const hostile = (pwned: string) => `[core]\n\tfsmonitor = "touch ${pwned}; false"\n\thooksPath = /nonexistent\n`;

/**
 * Where git is made to read a config file inside the workspace: `setup` arranges it (the person's
 * environment or the repository's own config) and returns the file's path relative to the workspace.
 */
const WAYS: Record<string, (ws: string, outside: string) => string> = {
  GIT_CONFIG_GLOBAL: (ws) => {
    process.env.GIT_CONFIG_GLOBAL = join(ws, "dotfiles", "gitconfig");
    return "dotfiles/gitconfig";
  },
  XDG_CONFIG_HOME: (ws, outside) => {
    process.env.HOME = outside;
    process.env.XDG_CONFIG_HOME = join(ws, "xdg");
    return "xdg/git/config";
  },
  "include.path in .git/config": (ws) => {
    execFileSync("git", ["-C", ws, "config", "include.path", "../tools/git.cfg"]);
    return "tools/git.cfg";
  },
  "includeIf in .git/config": (ws) => {
    execFileSync("git", ["-C", ws, "config", `includeIf.gitdir:${ws}/.path`, `${ws}/conf/local.cfg`]);
    return "conf/local.cfg";
  },
  "include.path in the global config": (ws, outside) => {
    process.env.GIT_CONFIG_GLOBAL = join(outside, "gitconfig");
    writeFileSync(join(outside, "gitconfig"), `[include]\n\tpath = ${ws}/team/shared.gitconfig\n`);
    return "team/shared.gitconfig";
  },
  "an include in an included file": (ws) => {
    execFileSync("git", ["-C", ws, "config", "include.path", "../cfg/first.cfg"]);
    mkdirSync(join(ws, "cfg"), { recursive: true });
    writeFileSync(join(ws, "cfg", "first.cfg"), "[include]\n\tpath = second.cfg\n");
    return "cfg/second.cfg";
  },
};

const isolate = (outside: string) => {
  // Never the real home: git's global config is the test's own, whatever a variant does.
  process.env.HOME = outside;
  delete process.env.XDG_CONFIG_HOME;
  delete process.env.GIT_CONFIG_GLOBAL;
};

describe.skipIf(!hasGit)("a git config git reads from outside the repository", () => {
  it.each(Object.keys(WAYS))(
    "runs its payload at the person's git status when written there (%s): what the refusals stop",
    (way) => {
      const t = tempDir("bxg-");
      try {
        const [ws, outside] = [join(t.dir, "ws"), join(t.dir, "outside")];
        mkdirSync(ws);
        mkdirSync(outside);
        isolate(outside);
        gitRepo(ws);
        const rel = WAYS[way]!(ws, outside);
        mkdirSync(dirname(join(ws, rel)), { recursive: true });
        writeFileSync(join(ws, rel), hostile(join(outside, "pwned")));
        personRunsGit(ws);
        expect(existsSync(join(outside, "pwned"))).toBe(true);
      } finally {
        t.cleanup();
      }
    },
  );

  it("is refused to file tools, existing or not, whichever way git is pointed at it; git status runs nothing", async () => {
    const variants = fc.sample(
      fc.tuple(fc.constantFrom(...Object.keys(WAYS)), fc.boolean(), fc.constantFrom("write_file", "edit_file")),
      { numRuns: 16, seed: 35 },
    );
    const escapes: string[] = [];
    for (const [way, exists, tool] of variants) {
      let rel = "";
      r = await rig({}, ({ ws, outside }) => {
        isolate(outside);
        gitRepo(ws);
        rel = WAYS[way]!(ws, outside);
        if (exists || tool === "edit_file") {
          mkdirSync(dirname(join(ws, rel)), { recursive: true });
          writeFileSync(join(ws, rel), "[user]\n\tname = a\n");
        }
      });
      const pwned = join(r.outside, "pwned");
      const args =
        tool === "write_file"
          ? { path: rel, content: hostile(pwned) }
          : { path: rel, old_text: "[user]", new_text: `${hostile(pwned)}[user]` };
      const res = await r.call(tool, args);
      const where = `${way}, ${exists ? "existing" : "absent"}, ${tool}: ${res.content}`;
      expect(res.decision, where).toBe(ToolDecision.DENIED);
      expect(res.rule, where).toBe("path:git-config");
      expect(res.content, where).toMatch(/a config file git obeys/);
      personRunsGit(r.ws);
      if (existsSync(pwned)) escapes.push(where);
      await r.cleanup();
      r = undefined;
    }
    expect(escapes).toEqual([]);
  }, 120_000);

  it("is not reachable at all in the person's home: a write to ~/.gitconfig or ~/.config/git/config is outside the workspace", async () => {
    r = await rig({}, ({ ws, outside }) => {
      isolate(outside);
      gitRepo(ws);
    });
    for (const path of [
      join(r.outside, ".gitconfig"),
      join(r.outside, ".config", "git", "config"),
      "../outside/.gitconfig",
    ]) {
      const res = await r.call("write_file", { path, content: hostile(join(r.outside, "pwned")) });
      expect(res.decision, path).toBe(ToolDecision.DENIED);
      expect(res.rule, path).toBe("path:outside-workspace");
    }
    expect(existsSync(join(r.outside, ".gitconfig"))).toBe(false);
  });

  it("makes the core.hooksPath an included or global config sets reviewed, as the repository's own is", async () => {
    r = await rig({}, ({ ws, outside }) => {
      isolate(outside);
      gitRepo(ws);
      execFileSync("git", ["-C", ws, "config", "include.path", "../tools/git.cfg"]);
      mkdirSync(join(ws, "tools"), { recursive: true });
      writeFileSync(join(ws, "tools", "git.cfg"), "[core]\n\thooksPath = dev/hooks\n");
      process.env.GIT_CONFIG_GLOBAL = join(outside, "gitconfig");
      writeFileSync(join(outside, "gitconfig"), `[core]\n\thooksPath = ${ws}/global-hooks\n`);
    });
    for (const [path, why] of [
      ["dev/hooks/pre-commit", "core.hooksPath dev/hooks"],
      ["global-hooks/pre-commit", `core.hooksPath ${r.ws}/global-hooks`],
    ] as const) {
      const res = await r.call("write_file", { path, content: "#!/bin/sh\ntouch /tmp/x\n" }, "s1");
      expect(res.decision, `${path}: ${res.content}`).toBe(ToolDecision.STAGED);
      expect(res.rule).toBe(`protected:${why}`);
    }
  });
});

describe.skipIf(!hasGit || !hasBwrap)("a git config git reads, written by a command", () => {
  it("is read-only when it exists and swept when the command creates it; git status runs nothing", async () => {
    const escapes: string[] = [];
    for (const [way, exists] of fc.sample(fc.tuple(fc.constantFrom(...Object.keys(WAYS)), fc.boolean()), {
      numRuns: 8,
      seed: 36,
    })) {
      let rel = "";
      r = await rig(
        { policy: { rules: [{ name: "cmds", tool: "run_command", effect: "allow" }] } },
        ({ ws, outside }) => {
          isolate(outside);
          gitRepo(ws);
          rel = WAYS[way]!(ws, outside);
          if (exists) {
            mkdirSync(dirname(join(ws, rel)), { recursive: true });
            writeFileSync(join(ws, rel), "[user]\n\tname = a\n");
          }
        },
      );
      const pwned = join(r.outside, "pwned");
      const res = await r.call("run_command", {
        command: `mkdir -p "$(dirname '${rel}')"; printf '${hostile(pwned).replaceAll("\n", "\\n").replaceAll("\t", "\\t")}' >> '${rel}'; echo done`,
      });
      const where = `${way}, ${exists ? "existing" : "absent"}: ${res.content}`;
      expect(res.content, where).toContain("done");
      const now = existsSync(join(r.ws, rel)) ? readFileSync(join(r.ws, rel), "utf8") : "";
      expect(now, where).not.toContain("fsmonitor");
      personRunsGit(r.ws);
      if (existsSync(pwned)) escapes.push(where);
      await r.cleanup();
      r = undefined;
    }
    expect(escapes).toEqual([]);
  }, 180_000);
});
