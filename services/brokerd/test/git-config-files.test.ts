import { describe, expect, it } from "vitest";
import { globalGitConfigs, includePaths, includeTarget } from "../src/policy/git-config-files.js";

describe("git config files git reads (policy/git-config-files.ts)", () => {
  it("finds every include and includeIf path, in any case, quoted, commented, on the header's line", () => {
    const text = [
      "[core]",
      "\tpath = not/an/include",
      "[include]",
      "\tpath = a.cfg",
      '[includeIf "gitdir:~/work/"]',
      '\tPath = "b c.cfg"',
      "[INCLUDE] path = d.cfg ; a comment",
      '[includeif "onbranch:main"]',
      "    path=~/e.cfg",
      "[user]",
      "\tpath = nor/this",
    ].join("\n");
    expect(includePaths(text)).toEqual(["a.cfg", "b c.cfg", "d.cfg", "~/e.cfg"]);
  });

  it("resolves a target as git does: from home for ~/, from the including file's directory otherwise", () => {
    expect(includeTarget("~/x.cfg", "/r/.git/config", "/h")).toBe("/h/x.cfg");
    expect(includeTarget("../tools/g.cfg", "/r/.git/config", "/h")).toBe("/r/tools/g.cfg");
    expect(includeTarget("/abs/g.cfg", "/r/.git/config", "/h")).toBe("/abs/g.cfg");
    expect(includeTarget("~other/g.cfg", "/r/.git/config", "/h")).toBeUndefined();
  });

  it("finds the global config where git does: GIT_CONFIG_GLOBAL alone, else XDG and ~/.gitconfig", () => {
    expect(globalGitConfigs({ GIT_CONFIG_GLOBAL: "/w/g" }, "/h").map((c) => c.path)).toEqual([
      "/w/g",
      "/etc/gitconfig",
    ]);
    expect(globalGitConfigs({ XDG_CONFIG_HOME: "/x", GIT_CONFIG_SYSTEM: "/s" }, "/h").map((c) => c.path)).toEqual([
      "/x/git/config",
      "/h/.gitconfig",
      "/s",
    ]);
    expect(globalGitConfigs({}, "/h").map((c) => c.path)).toEqual([
      "/h/.config/git/config",
      "/h/.gitconfig",
      "/etc/gitconfig",
    ]);
  });
});
