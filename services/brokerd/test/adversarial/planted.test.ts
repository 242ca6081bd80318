import fc from "fast-check";
import { ToolDecision } from "@boxmaker/common";
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_PROTECTED_PATTERNS, DEFAULT_REVIEWED_PATTERNS } from "../../src/policy/protected-paths.js";
import { rig, type Rig } from "../helpers.js";
import { requires } from "../../../../test/support/requirements.js";

/*
 * A hostile model with commands and writes allowed, trying to leave something
 * for a program outside the sandbox (the person's git, shell, editor, the next
 * session) or to read a secret under a name the patterns do not know.
 */

let r: Rig | undefined;
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
});

const allowAll = {
  policy: {
    rules: [
      { name: "cmds", tool: "run_command", effect: "allow" },
      { name: "writes", tool: "write_file", effect: "allow" },
      { name: "edits", tool: "edit_file", effect: "allow" },
    ],
  },
};

const SECRET = "AKIAHOSTILE0000SECRET";
const hasGit = requires("the planted-file tests (real git)", ["git"]);
const hasBwrap = requires("the planted-file tests (bwrap)", ["bwrap"]);

function gitRepo(ws: string): void {
  execFileSync("git", ["init", "-q", ws]);
  writeFileSync(join(ws, "README.md"), "hello\n");
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

/** Runs git in the workspace as the person would, with hooks and fsmonitor as git reads them. */
function personRunsGit(ws: string, args: string[]): void {
  try {
    execFileSync("git", ["-C", ws, ...args], {
      stdio: "ignore",
      timeout: 20_000,
      env: { ...process.env, GIT_CONFIG_NOSYSTEM: "1", HOME: ws },
    });
  } catch {
    /* a broken repository is fine: what matters is whether planted code ran */
  }
}

describe.skipIf(!hasBwrap || !hasGit)("what a sandboxed command plants for later", () => {
  // Each attack leaves `pwned` in the outside directory if anything it planted ever runs.
  const attacks = (pwned: string): Record<string, string> => ({
    "a pre-commit hook": `mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch ${pwned}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
    "core.fsmonitor in .git/config": `printf '[core]\\n\\tfsmonitor = "touch ${pwned}; false"\\n' >> .git/config`,
    "a commondir pointing at a planted config": `mkdir -p ../x 2>/dev/null; mkdir -p evil; printf '[core]\\n\\tfsmonitor = "touch ${pwned}; false"\\n' > evil/config; echo ../evil > .git/commondir`,
    "a subdirectory .git file (gitdir:)": `mkdir -p sub evil/objects evil/refs; echo 'ref: refs/heads/main' > evil/HEAD; printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "touch ${pwned}; false"\\n' > evil/config; echo 'gitdir: ../evil' > sub/.git`,
    "mv .git .gitx and a fresh .git": `mv .git .gitx; mkdir -p .git; cp -r .gitx/. .git/ 2>/dev/null; printf '[core]\\n\\tfsmonitor = "touch ${pwned}; false"\\n' >> .git/config`,
    "a .git symlink to a planted repository": `mkdir -p sub2 evil2/objects evil2/refs; echo 'ref: refs/heads/main' > evil2/HEAD; printf '[core]\\n\\tfsmonitor = "touch ${pwned}; false"\\n' > evil2/config; ln -s ../evil2 sub2/.git`,
    "a hook under a renamed parent": `mv .git/hooks .git/hooks-old; mkdir .git/hooks; printf '#!/bin/sh\\ntouch ${pwned}\\n' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
  });

  it("nothing the command leaves runs at the person's next git status or commit", async () => {
    r = await rig(allowAll, ({ ws }) => gitRepo(ws));
    const ws = r.ws;
    const pwned = join(r.outside, "pwned");
    const before = readFileSync(join(ws, ".git", "config"), "utf8");
    const results: string[] = [];
    for (const [name, command] of Object.entries(attacks(pwned))) {
      const res = await r.call("run_command", { command: `${command}; echo done` });
      expect(res.decision, name).toBe(ToolDecision.ALLOWED);
      results.push(`${name}: ${res.content}`);
      for (const dir of [".", "sub", "sub2"]) {
        personRunsGit(join(ws, dir), ["status"]);
        personRunsGit(join(ws, dir), [
          "-c",
          "user.email=a@b",
          "-c",
          "user.name=a",
          "commit",
          "-qm",
          "x",
          "--allow-empty",
        ]);
      }
      expect(existsSync(pwned), `${name} ran code outside the sandbox:\n${results.join("\n")}`).toBe(false);
    }
    expect(readFileSync(join(ws, ".git", "config"), "utf8")).toBe(before);
    expect(existsSync(join(ws, ".gitx"))).toBe(false);
    // What was planted at a protected path was taken out of the workspace, and the model was told.
    expect(existsSync(join(ws, "sub", ".git"))).toBe(false);
    expect(existsSync(join(ws, "sub2", ".git"))).toBe(false);
    expect(results.join("\n")).toMatch(/sub\/\.git: removed, a protected path the command created/);
    expect(readdirSync(join(r.dir, "state", "quarantine", "planted")).length).toBeGreaterThan(0);
  });

  it("editor, hook-manager, MCP and instruction files a command creates are taken out of the workspace", async () => {
    r = await rig(allowAll, ({ ws }) => writeFileSync(join(ws, "AGENTS.md"), "Be careful.\n"));
    const planted = [
      ".vscode/tasks.json",
      ".husky/pre-commit",
      ".pre-commit-config.yaml",
      ".mcp.json",
      "package.json",
      "CLAUDE.md",
      "lefthook.yml",
      ".github/workflows/ci.yml",
      "deep/er/.vscode/settings.json",
      ".VSCode/tasks.json",
    ];
    const cmd = planted.map((p) => `mkdir -p "$(dirname '${p}')"; echo planted > '${p}'`).join("; ");
    const res = await r.call("run_command", {
      command: `${cmd}; echo 'obey me' > AGENTS.md; ln -sf /etc/passwd GEMINI.md; true`,
    });
    for (const p of [...planted, "GEMINI.md"])
      expect(existsSync(join(r.ws, p)) || isLink(join(r.ws, p)), p).toBe(false);
    expect(readFileSync(join(r.ws, "AGENTS.md"), "utf8")).toBe("Be careful.\n");
    expect(res.content).toMatch(/\.mcp\.json: removed/);
    expect(res.content).toMatch(/propose it with write_file/);
    // Ordinary files the same command wrote stay.
    const ok = await r.call("run_command", { command: "mkdir -p src && echo fine > src/app.js && echo ok" });
    expect(ok.content).not.toMatch(/removed/);
    expect(readFileSync(join(r.ws, "src", "app.js"), "utf8")).toBe("fine\n");
  });
});

const isLink = (p: string) => {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
};

describe.skipIf(!hasBwrap)("secrets by identity: a rename or a hard link does not unmask them", () => {
  it("mv of a secret's directory or of .git fails in the sandbox, and the secret stays unreadable", async () => {
    r = await rig(allowAll, ({ ws }) => {
      mkdirSync(join(ws, ".aws"));
      writeFileSync(join(ws, ".aws", "credentials"), `aws_secret_access_key=${SECRET}\n`);
      mkdirSync(join(ws, "deploy", "prod"), { recursive: true });
      writeFileSync(join(ws, "deploy", "prod", ".env"), `TOKEN=${SECRET}\n`);
      mkdirSync(join(ws, ".git"));
      writeFileSync(join(ws, ".git", "config"), `[remote "o"]\n\turl = https://x:${SECRET}@h/r\n`);
    });
    const res = await r.call("run_command", {
      command:
        "mv .aws awsx; mv deploy d2; mv deploy/prod deploy/p2; mv .git .gitx; ln .aws/credentials c2; cp -r .aws awscopy; " +
        "cat awsx/credentials d2/prod/.env deploy/p2/.env .gitx/config c2 awscopy/credentials .aws/credentials 2>&1; echo end",
    });
    expect(res.content).toContain("end");
    expect(res.content).not.toContain(SECRET);
    expect(existsSync(join(r.ws, ".aws", "credentials"))).toBe(true);
    expect(existsSync(join(r.ws, "deploy", "prod", ".env"))).toBe(true);
    for (const p of [
      "awsx/credentials",
      "d2/prod/.env",
      "deploy/p2/.env",
      ".gitx/config",
      "c2",
      "awscopy/credentials",
    ]) {
      const read = await r.call("read_file", { path: p });
      expect(read.content, p).not.toContain(SECRET);
    }
    const later = await r.call("run_command", {
      command: "cat awsx/credentials c2 2>&1; grep -r AKIA . 2>&1; echo end",
    });
    expect(later.content).not.toContain(SECRET);
  });

  it("a secret renamed or hard-linked outside the sandbox after brokerd saw it is refused by every file tool", async () => {
    r = await rig(allowAll, ({ ws }) => {
      writeFileSync(join(ws, ".env"), `KEY=${SECRET}\n`);
      mkdirSync(join(ws, ".ssh"));
      writeFileSync(join(ws, ".ssh", "id_ed25519"), `-----BEGIN ${SECRET}\n`);
      writeFileSync(join(ws, "prod.tfvars"), `db_password = "${SECRET}"\n`);
    });
    await r.call("run_command", { command: "true" }); // brokerd's walk sees the secrets
    linkSync(join(r.ws, ".env"), join(r.ws, "notes.txt"));
    renameSync(join(r.ws, ".ssh", "id_ed25519"), join(r.ws, "key.txt"));
    renameSync(join(r.ws, "prod.tfvars"), join(r.ws, "vars.txt"));
    for (const path of ["notes.txt", "key.txt", "vars.txt"]) {
      const read = await r.call("read_file", { path });
      expect(read.content, path).toMatch(/secret file under another name/);
      expect(read.content).not.toContain(SECRET);
      const ranged = await r.call("read_file", { path, start_line: 1, end_line: 1 });
      expect(ranged.content).not.toContain(SECRET);
      const edit = await r.call("edit_file", { path, old_text: "KEY", new_text: "K" });
      expect(edit.content).not.toContain(SECRET);
    }
    const search = await r.call("search_files", { pattern: "AKIA" });
    expect(search.content).not.toContain(SECRET);
  });

  it("the common credential files of popular tools are secrets, whatever their case", async () => {
    const files = [
      ".vault-token",
      ".config/gh/hosts.yml",
      ".cargo/credentials.toml",
      "putty.PPK",
      ".my.cnf",
      ".env~",
      ".bash_history",
      ".zsh_history",
      ".python_history",
      "prod.tfvars",
      "staging.env",
      ".config/gcloud/application_default_credentials.json",
      ".docker/config.json",
      ".kube/config",
      ".Vault-Token",
    ];
    r = await rig(allowAll, ({ ws }) => {
      for (const f of files) {
        mkdirSync(join(ws, f, ".."), { recursive: true });
        writeFileSync(join(ws, f), `${SECRET}\n`);
      }
    });
    for (const f of files) {
      const read = await r.call("read_file", { path: f });
      expect(read.content, f).toMatch(/looks like a secret|secret file/);
    }
    const cat = await r.call("run_command", { command: `cat ${files.map((f) => `'${f}'`).join(" ")} 2>&1; echo end` });
    expect(cat.content).not.toContain(SECRET);
  });
});

describe("file tools and protected paths, whatever the policy allows", () => {
  it("refuses every default protected path and stages every reviewed one, with the reason", async () => {
    r = await rig(allowAll, ({ ws }) => mkdirSync(join(ws, ".git")));
    const samples = (globs: readonly string[]) =>
      globs.map((g) => (g.startsWith("./") ? g.slice(2) : g).replace("*", "x")).map((p) => `${p}/f`);
    let refused = 0;
    for (const p of [...samples(DEFAULT_PROTECTED_PATTERNS), "sub/.git", ".git/hooks/pre-commit", ".GIT/hooks/x"]) {
      const res = await r.call("write_file", { path: p, content: "planted" });
      expect(res.decision, p).toBe(ToolDecision.DENIED);
      expect(res.content, p).toMatch(/protected path/);
      refused++;
    }
    let staged = 0;
    for (const p of [...samples(DEFAULT_REVIEWED_PATTERNS), "AGENTS.md", "package.json", ".mcp.json"]) {
      const path =
        p.endsWith(".md/f") || p.endsWith(".json/f") || p.endsWith(".yml/f") || p.endsWith(".yaml/f")
          ? p.slice(0, -2)
          : p;
      const res = await r.call("write_file", { path, content: "planted" });
      expect(res.decision, path).toBe(ToolDecision.STAGED);
      expect(res.rule, path).toMatch(/^protected:/);
      expect(existsSync(join(r.ws, path)), path).toBe(false);
      staged++;
    }
    expect(refused).toBeGreaterThan(40);
    expect(staged).toBeGreaterThan(30);
  });

  it("an operator can add protected paths; removing a default needs it named, and a typo is a config error", async () => {
    r = await rig({ ...allowAll, protected_patterns: ["./deploy/*.sh"], unprotect: ["./package.json"] });
    expect((await r.call("write_file", { path: "deploy/run.sh", content: "x" })).decision).toBe(ToolDecision.DENIED);
    expect((await r.call("write_file", { path: "package.json", content: "{}" })).decision).toBe(ToolDecision.ALLOWED);
    await r.cleanup();
    r = undefined;
    await expect(rig({ unprotect: ["package.json"] })).rejects.toThrow(/not a default protected path/);
  });

  it("a home directory as a workspace root is refused unless the operator says so", async () => {
    const home = process.env.HOME;
    try {
      await expect(
        rig(({ ws }) => {
          process.env.HOME = ws;
          return {};
        }),
      ).rejects.toThrow(/is the home directory .*allow_home_workspace/);
      r = await rig(({ ws }) => {
        process.env.HOME = ws;
        return { allow_home_workspace: true };
      });
      expect(r.broker).toBeDefined();
    } finally {
      process.env.HOME = home;
    }
  });

  it("an overwrite keeps the file's mode: an edited script stays executable", async () => {
    r = await rig(allowAll, ({ ws }) => {
      writeFileSync(join(ws, "tool.sh"), "#!/bin/sh\necho hi\n");
      chmodSync(join(ws, "tool.sh"), 0o750);
      writeFileSync(join(ws, "private.txt"), "a\n");
      chmodSync(join(ws, "private.txt"), 0o600);
    });
    await r.call("edit_file", { path: "tool.sh", old_text: "hi", new_text: "hello" });
    await r.call("write_file", { path: "private.txt", content: "b\n" });
    expect(statSync(join(r.ws, "tool.sh")).mode & 0o7777).toBe(0o750);
    expect(statSync(join(r.ws, "private.txt")).mode & 0o7777).toBe(0o600);
    expect(readFileSync(join(r.ws, "tool.sh"), "utf8")).toContain("hello");
  });
});

describe.skipIf(!hasBwrap)("a run_command rule scoped by paths confines the command to them", () => {
  it("writes land only under the rule's paths; the rest of the workspace is not there to read or write", async () => {
    r = await rig(
      {
        policy: {
          rules: [{ name: "scratch", tool: "run_command", effect: "allow", paths: ["scratch", "scratch/**"] }],
        },
      },
      ({ ws }) => {
        mkdirSync(join(ws, "scratch"));
        mkdirSync(join(ws, "src"));
        writeFileSync(join(ws, "src", "a.ts"), "original\n");
        writeFileSync(join(ws, "scratch", "in.txt"), "mine\n");
      },
    );
    const res = await r.call("run_command", {
      cwd: "scratch",
      command:
        "cp in.txt out.txt; cp ../src/a.ts stolen.txt; cp out.txt ../src/b.ts; touch ../new.txt; cp /dev/null ../src/a.ts; ln ../src/a.ts hard; mv ../src ../src2; mkdir sub; cp out.txt sub/f; echo end",
    });
    expect(res.decision, `${res.rule}: ${res.content}`).toBe(ToolDecision.ALLOWED);
    expect(res.content).toContain("end");
    expect(readFileSync(join(r.ws, "scratch", "out.txt"), "utf8")).toBe("mine\n");
    expect(readFileSync(join(r.ws, "scratch", "sub", "f"), "utf8")).toBe("mine\n");
    expect(existsSync(join(r.ws, "scratch", "stolen.txt"))).toBe(false);
    expect(existsSync(join(r.ws, "src", "b.ts"))).toBe(false);
    expect(readFileSync(join(r.ws, "src", "a.ts"), "utf8")).toBe("original\n");
    expect(existsSync(join(r.ws, "new.txt"))).toBe(false);
    expect(existsSync(join(r.ws, "scratch", "hard"))).toBe(false);
    expect(existsSync(join(r.ws, "src2"))).toBe(false);
    // Outside the rule's paths the command is not covered by it (default: ask).
    expect((await r.call("run_command", { cwd: "src", command: "touch x" })).decision).toBe(ToolDecision.STAGED);
  });

  it("every way of naming a file outside the rule's paths finds nothing (generated names and readers)", async () => {
    r = await rig(
      {
        policy: {
          rules: [{ name: "scratch", tool: "run_command", effect: "allow", paths: ["scratch", "scratch/**"] }],
        },
      },
      ({ ws }) => {
        mkdirSync(join(ws, "scratch"));
        mkdirSync(join(ws, "private"));
        writeFileSync(join(ws, "private", "plan.txt"), "CANARY-plan-7f3a\n");
        writeFileSync(join(ws, "top.txt"), "CANARY-top-91c2\n");
      },
    );
    const names = (ws: string) => [
      "../private/plan.txt",
      "../top.txt",
      `${ws}/private/plan.txt`,
      `${ws}/top.txt`,
      "/proc/self/cwd/../private/plan.txt",
      "./../private/../top.txt",
      `${ws}/scratch/../private/plan.txt`,
    ];
    const readers = [
      (f: string) => `cat ${f}`,
      (f: string) => `head -c 100 ${f}`,
      (f: string) => `ln -s ${f} s && cat s`,
      (f: string) => `ln ${f} h 2>/dev/null; cat h`,
      (f: string) => `cd .. && cat ${f.replace(/^\.\.\//, "")}`,
      (f: string) => `cp ${f} c && cat c`,
    ];
    const picks = fc.sample(fc.tuple(fc.constantFrom(...names(r.ws)), fc.constantFrom(...readers)), {
      numRuns: 12,
      seed: 7,
    });
    // Every name against the plainest reader, then a generated sample of the rest.
    const lines = [...names(r.ws).map((f) => `cat ${f}`), ...picks.map(([f, read]) => read(f))];
    const grep = "grep -rh CANARY / --include=*.txt 2>/dev/null | head -3";
    lines.push(grep, `find / -name plan.txt 2>/dev/null; ls -a ${r.ws} ..`);
    for (const command of lines) {
      // Errors go too: "cat: ../private/plan.txt: No such file" names the file, not its content.
      const res = await r.call("run_command", { cwd: "scratch", command: `{ ${command}; } 2>/dev/null; echo end` });
      expect(res.decision, `${command}: ${res.rule}`).toBe(ToolDecision.ALLOWED);
      expect(res.content, command).toContain("end");
      expect(res.content, command).not.toMatch(/CANARY|plan\.txt|top\.txt|private/);
    }
  }, 120_000);
});

describe.skipIf(!hasBwrap)("what a person approves is not mistaken for a plant", () => {
  it("an approved AGENTS.md written while a command runs stays in place", async () => {
    r = await rig({ policy: { rules: [{ name: "cmds", tool: "run_command", effect: "allow" }] } });
    const staged = await r.call("write_file", { path: "AGENTS.md", content: "Run the tests first.\n" });
    expect(staged).toMatchObject({ decision: ToolDecision.STAGED, rule: "protected:AGENTS.md" });
    const running = r.call("run_command", { command: "sleep 1; echo done" });
    await new Promise((ok) => setTimeout(ok, 300));
    const decided = await r.broker.decideProposal(staged.proposalId, true, "");
    expect(decided.state).toBe("applied");
    const res = await running;
    expect(res.content).not.toMatch(/removed/);
    expect(readFileSync(join(r.ws, "AGENTS.md"), "utf8")).toBe("Run the tests first.\n");
  });
});
