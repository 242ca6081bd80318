import { ToolDecision } from "@boxmaker/common";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import fc from "fast-check";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PolicyRule } from "../../src/config-types.js";
import { decide } from "../../src/policy/rules.js";
import { PROGRAMS } from "../../src/policy/program-options.js";
import { analyzeCommand } from "../../src/policy/shell.js";
import { rig, type Rig } from "../helpers.js";

const defaults = { read: "allow", write: "ask", exec: "ask", network: "deny" } as const;
const run = (rules: PolicyRule[], command: string, d: Record<string, "allow" | "ask" | "deny"> = defaults) =>
  decide(rules, d as typeof defaults, { tool: "run_command", risk: "exec", paths: [], command, hosts: [] });

const noRm: PolicyRule[] = [{ name: "no-rm", tool: "run_command", effect: "deny", command_prefixes: ["rm"] }];

const RM_BYPASSES = [
  "rm -rf x",
  "command rm -rf x",
  "\\rm -rf x",
  "/bin/rm -rf x",
  "/usr/bin/rm x",
  "env rm x",
  "env -i FOO=1 rm x",
  "exec rm x",
  "{ rm x; }",
  "(rm x)",
  "if true; then rm x; fi",
  "while false; do rm x; done",
  "for f in a; do rm $f; done",
  "case a in a) rm x;; esac",
  "f() { rm x; }; f",
  "true && rm x",
  "false || rm x",
  "echo | rm x",
  "echo $(rm x)",
  "echo `rm x`",
  "nice -n 5 rm x",
  "timeout 5 rm x",
  "sudo -u root rm x",
  "nohup rm x",
  "xargs rm < list",
  "echo a | xargs -n1 rm",
  "find . -name '*.o' -exec rm {} ;",
  "find . -execdir rm {} +",
  "sh -c 'rm x'",
  'bash -c "rm -rf x"',
  "r\\m x",
  "'rm' x",
  '"rm" x',
  "command command rm x",
  "env nice timeout 3 rm x",
  "! rm x",
  "rm x &",
  "time rm x",
  "((rm x))",
  "time ! rm x",
];

describe("deny rules apply to programs, wherever they sit in the line", () => {
  it.each(RM_BYPASSES)("%s is denied", (line) => {
    expect(run(noRm, line)).toEqual({ effect: "deny", rule: "no-rm" });
  });

  it("does not deny look-alikes", () => {
    expect(run(noRm, "echo rm").effect).toBe("ask");
    expect(run(noRm, "rmdir x").effect).toBe("ask");
    expect(run(noRm, "command -v rm").effect).toBe("ask");
  });

  it.each([
    ["eval 'rm x'", "eval"],
    ["x=rm; $x file", "computed"],
    ['sh -c "$CMD"', "computed script"],
    ["$(echo rm) x", "computed"],
    ["source ./script.sh", "source"],
    ["bash script.sh", "script file"],
    ["if then fi ((", "does not parse"],
  ])("what the parser cannot see through is at least ask: %s", (line, why) => {
    expect(analyzeCommand(line).opaque.join(" ")).toMatch(new RegExp(why));
    const allowAll: PolicyRule[] = [{ tool: "run_command", effect: "allow" }];
    expect(run(allowAll, line)).toEqual({ effect: "ask", rule: "command:opaque" });
    expect(run([], line, { ...defaults, exec: "allow" }).effect).toBe("ask");
  });

  it("an allow covers only lines whose every program is allowed and that write no file", () => {
    const rules: PolicyRule[] = [
      { name: "ro", tool: "run_command", effect: "allow", command_prefixes: ["git status", "ls", "grep"] },
    ];
    expect(run(rules, "git status && ls -la | grep x").effect).toBe("allow");
    expect(run(rules, "ls > /dev/null 2>&1").effect).toBe("allow");
    expect(run(rules, "ls > out.txt").effect).toBe("ask");
    expect(run(rules, "ls; rm x").effect).toBe("ask");
    expect(run(rules, "ls $(rm x)").effect).toBe("ask");
    expect(run(rules, "env rm x").effect).toBe("ask");
  });
});

describe("rules on every tool name are consulted", () => {
  let r: Rig | undefined;
  afterEach(async () => {
    await r?.cleanup();
    r = undefined;
  });

  it("find_tool and call_tool can be denied; an ask on call_tool stages what it calls", async () => {
    r = await rig({ policy: { rules: [{ name: "no-find", tool: "find_tool", effect: "deny" }] } });
    expect(await r.call("find_tool", { query: "blob" })).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "no-find",
    });
    await r.cleanup();
    r = await rig({ policy: { rules: [{ name: "no-call", tool: "call_tool", effect: "deny" }] } });
    expect(
      await r.call("call_tool", { name: "read_blob", arguments: { blob: `blob:sha256:${"0".repeat(64)}` } }),
    ).toMatchObject({ decision: ToolDecision.DENIED, rule: "no-call" });
    await r.cleanup();
    r = await rig({ policy: { rules: [{ name: "review-calls", tool: "call_tool", effect: "ask" }] } });
    const found = await r.call("find_tool", { query: "read lines of a stored large result blob" });
    expect(found.decision).toBe(ToolDecision.ALLOWED);
    const blob = r.broker.blobs.put("a\nb\n");
    const res = await r.call("call_tool", { name: "read_blob", arguments: { blob: `blob:sha256:${blob}` } });
    expect(res).toMatchObject({ decision: ToolDecision.STAGED, rule: "review-calls" });
  });

  it("spawn_agent goes through policy: allowed by default, deny and ask hold", async () => {
    r = await rig();
    expect(await r.call("spawn_agent", { task: "count" })).toMatchObject({
      decision: ToolDecision.ALLOWED,
      isError: false,
    });
    await r.cleanup();
    r = await rig({ policy: { rules: [{ name: "no-sub", tool: "spawn_agent", effect: "deny" }] } });
    expect(await r.call("spawn_agent", { task: "count" })).toMatchObject({
      decision: ToolDecision.DENIED,
      rule: "no-sub",
    });
  });

  it("search_files does not open files a path rule denies", async () => {
    r = await rig(
      { policy: { rules: [{ name: "no-private", tool: "*", effect: "deny", paths: ["private/**"] }] } },
      ({ ws }) => {
        mkdirSync(join(ws, "private"));
        writeFileSync(join(ws, "private", "p.txt"), "needle private\n");
        writeFileSync(join(ws, "pub.txt"), "needle public\n");
      },
    );
    const res = await r.call("search_files", { pattern: "needle" });
    expect(res.content).toMatch(/pub\.txt:1: needle public/);
    expect(res.content).not.toMatch(/needle private/);
    expect(res.content).toMatch(/skipped: policy rules/);
  });
});

/** Generated inputs across the program-reading properties below; printed at the end. */
const programCounts = { inputs: 0, bypasses: 0, literalMisses: 0, unflagged: 0, sedRefused: 0, sedFalseAlarms: 0 };
afterAll(() => {
  console.log(
    `[policy programs] inputs=${programCounts.inputs} bypasses=${programCounts.bypasses} ` +
      `(a word-for-word matcher would miss ${programCounts.literalMisses}) write/run options unflagged=${programCounts.unflagged} ` +
      `sed scripts sandboxed sed refuses=${programCounts.sedRefused}, flagged that it accepts=${programCounts.sedFalseAlarms}`,
  );
});

const exec = (rules: PolicyRule[], command: string) =>
  decide(rules, defaults, { tool: "run_command", risk: "exec", paths: [], command, hosts: [] });

/** A subcommand each program's operators would deny, and other words that run it. */
const DENIED: Array<{ program: string; sub: string[]; spellings?: string[][] }> = [
  { program: "git", sub: ["push"] },
  { program: "npm", sub: ["publish"], spellings: [["publ"], ["publis"]] },
  { program: "npm", sub: ["uninstall"], spellings: [["rm"], ["r"], ["un"], ["remove"], ["remo"]] },
  { program: "pnpm", sub: ["publish"] },
  { program: "yarn", sub: ["publish"], spellings: [["workspace", "w", "publish"]] },
  { program: "cargo", sub: ["publish"] },
  { program: "cargo", sub: ["build"], spellings: [["b"]] },
  { program: "docker", sub: ["push"], spellings: [["image", "push"]] },
  { program: "podman", sub: ["rm"], spellings: [["container", "rm"]] },
  { program: "kubectl", sub: ["delete"] },
  { program: "pip", sub: ["install"] },
  { program: "pip3", sub: ["install"] },
  { program: "helm", sub: ["uninstall"] },
  { program: "terraform", sub: ["apply"] },
  { program: "gh", sub: ["pr", "merge"] },
  { program: "go", sub: ["run"] },
];

/** One global option of `program` as the table knows it, written in one of the ways the program reads it. */
function globalOptionArb(program: string): fc.Arbitrary<string[]> {
  const syntax = PROGRAMS[program]!;
  const value = fc.constantFrom(".", "x", "push", "publish", "install", "a.b=c", "-", "true", "false", "--");
  const forms: fc.Arbitrary<string[]>[] = [];
  if (syntax.value.length) {
    forms.push(fc.tuple(fc.constantFrom(...syntax.value), value).map(([o, v]) => [o, v]));
    const long = syntax.value.filter((o) => o.startsWith("--") || (!syntax.bundles && o.length > 2));
    if (long.length) forms.push(fc.tuple(fc.constantFrom(...long), value).map(([o, v]) => [`${o}=${v}`]));
    const short = syntax.value.filter((o) => /^-[A-Za-z]$/.test(o));
    if (syntax.bundles && short.length) forms.push(fc.tuple(fc.constantFrom(...short), value).map(([o, v]) => [o + v]));
  }
  if (syntax.flags.length) {
    forms.push(fc.constantFrom(...syntax.flags).map((f) => [f]));
    if (syntax.boolWords) forms.push(fc.tuple(fc.constantFrom(...syntax.flags), fc.constantFrom("true", "false")));
  }
  if (syntax.joined?.length) forms.push(fc.constantFrom(...syntax.joined).map((o) => [`${o}=x`]));
  // Options the table does not know: the matcher must err towards the rule.
  forms.push(fc.stringMatching(/^--zz[a-z]{1,5}$/).map((o) => [o]));
  forms.push(fc.tuple(fc.stringMatching(/^--zz[a-z]{1,5}$/), value).map(([o, v]) => [o, v]));
  return fc.oneof(...forms);
}

const q = (w: string) => (/^[A-Za-z0-9_./=+:,-]+$/.test(w) && w !== "" ? w : `'${w.replace(/'/g, "'\\''")}'`);

describe("deny rules read the subcommand past global options", () => {
  it("no placement of global options takes a command past a deny on its subcommand", () => {
    for (const { program, sub, spellings } of DENIED) {
      const rules: PolicyRule[] = [
        { name: "no", tool: "run_command", effect: "deny", command_prefixes: [[program, ...sub].join(" ")] },
      ];
      const line = fc.record({
        opts: fc.array(globalOptionArb(program), { maxLength: 4 }),
        words: fc.constantFrom(sub, ...(spellings ?? [])),
        lead: fc.constantFrom("", "sudo -u root ", "env A=1 ", "command ", "true && ", "nice -n 5 ", "timeout 5 "),
        path: fc.constantFrom("", "/usr/bin/"),
        tail: fc.constantFrom("", " x", " --force origin"),
      });
      fc.assert(
        fc.property(line, ({ opts, words, lead, path, tail }) => {
          programCounts.inputs++;
          const argv = [program, ...opts.flat(), ...words];
          const command = `${lead}${path}${argv.map(q).join(" ")}${tail}`;
          if (argv.slice(1, 1 + sub.length).join(" ") !== sub.join(" ")) programCounts.literalMisses++;
          const d = exec(rules, command);
          if (d.effect !== "deny") programCounts.bypasses++;
          return d.effect === "deny";
        }),
        { numRuns: 120 },
      );
    }
    expect(programCounts.bypasses).toBe(0);
    // The generated lines are real attempts: most would pass a word-for-word prefix.
    expect(programCounts.literalMisses).toBeGreaterThan(programCounts.inputs / 2);
  }, 120_000);

  it("real git agrees with the table on where the subcommand is", () => {
    const dir = mkdtempSync(join(tmpdir(), "bx-git-"));
    const rules: PolicyRule[] = [
      { name: "no-push", tool: "run_command", effect: "deny", command_prefixes: ["git push"] },
    ];
    const opt = fc.oneof(
      fc.constantFrom(["-C", "."], ["-c", "a.b=c"], ["--config-env", "a.b=HOME"], ["--config-env=a.b=HOME"]),
      fc.constantFrom(
        ["--git-dir", "g"],
        ["--git-dir=g"],
        ["--work-tree", "."],
        ["--work-tree=."],
        ["--namespace", "n"],
      ),
      fc.constantFrom(["--namespace=n"], ["-p"], ["-P"], ["--no-pager"], ["--paginate"], ["--bare"], ["--exec-path=."]),
      fc.constantFrom(
        ["--no-replace-objects"],
        ["--literal-pathspecs"],
        ["--no-optional-locks"],
        ["--icase-pathspecs"],
      ),
    );
    fc.assert(
      fc.property(fc.array(opt, { minLength: 1, maxLength: 4 }), (opts) => {
        programCounts.inputs++;
        const words = opts.flat();
        // git itself reads the word after these options as its subcommand…
        const r = spawnSync("git", [...words, "version"], {
          cwd: dir,
          encoding: "utf8",
          env: { ...process.env, HOME: dir },
        });
        if (!r.stdout.startsWith("git version")) return false;
        // …and so does the policy.
        return exec(rules, `git ${words.map(q).join(" ")} push`).effect === "deny";
      }),
      { numRuns: 60 },
    );
  });

  it("an unknown option before the subcommand matches deny and ask rules on the program, never an allow", () => {
    const rules: PolicyRule[] = [
      { name: "no-push", tool: "run_command", effect: "deny", command_prefixes: ["git push"] },
      { name: "status", tool: "run_command", effect: "allow", command_prefixes: ["git status"] },
    ];
    expect(exec(rules, "git --new-option status")).toEqual({ effect: "deny", rule: "no-push" });
    expect(exec(rules, "git -Cfoo push")).toEqual({ effect: "deny", rule: "no-push" });
    expect(exec(rules, "git $OPT push").effect).toBe("deny");
    expect(exec(rules, "git -c alias.p=push p")).toEqual({ effect: "deny", rule: "no-push" });
    expect(exec(rules, "git status")).toEqual({ effect: "allow", rule: "status" });
    // Only the program's own deny rules: other programs are untouched.
    expect(exec(rules, "git --no-pager status").effect).toBe("ask");
    expect(exec(rules, "npm --zzz publish").effect).toBe("ask");
  });

  it("wrapper options are read by the same table: none hides the command", () => {
    for (const line of [
      "echo x | xargs -i rm x",
      "xargs --max-args 1 rm",
      "xargs -l rm",
      "env - rm x",
      "env -i0 rm x",
      "sudo -Eu root rm x",
      "sudo -E -- rm x",
      "timeout --foreground 5 rm x",
      "timeout -sKILL 5 rm x",
      "flock lock -c 'rm x'",
      "flock -n lock rm x",
      "stdbuf -oL rm x",
      "ionice -c2 -n7 rm x",
      "nice -5 rm x",
    ]) {
      expect(run(noRm, line), line).toEqual({ effect: "deny", rule: "no-rm" });
    }
    for (const line of ["env -S'rm x'", "env -iS'rm x'", "xargs --max-a 1 rm", "timeout --new 5 rm"]) {
      expect(analyzeCommand(line).opaque.length, line).toBeGreaterThan(0);
      expect(run(noRm, line).effect, line).not.toBe("allow");
    }
  });
});

/** An allowed program given an option that writes or runs: each must be asked about. */
const WRITE_OR_RUN: Array<[string, string]> = [
  ["find", "find . -exec rm {} ;"],
  ["find", "find . -execdir sh -c id ;"],
  ["find", "find . -ok rm {} ;"],
  ["find", "find . -okdir rm {} ;"],
  ["find", "find . -fprint out"],
  ["find", "find . -fprint0 out"],
  ["find", "find . -fprintf out %p"],
  ["find", "find . -fls out"],
  ["find", "find . -name '*.o' -delete"],
  ["find", "find $DIR"],
  ["sed", "sed -i s/a/b/ f"],
  ["sed", "sed -i.bak s/a/b/ f"],
  ["sed", "sed -ni p f"],
  ["sed", "sed --in-place s/a/b/ f"],
  ["sed", "sed --in-pl=.b s/a/b/ f"],
  ["sed", "sed s/a/b/ -i f"],
  ["sed", "sed 'w out' f"],
  ["sed", "sed '1,3W out' f"],
  ["sed", "sed '/x/e id' f"],
  ["sed", "sed 's/a/b/w out' f"],
  ["sed", "sed 's/a/b/gw out' f"],
  ["sed", "sed 's|a|id|e' f"],
  ["sed", "sed 's/[/]/id/e' f"],
  ["sed", "sed -n -e p -e 'w x' f"],
  ["sed", "sed --expression='1e id' f"],
  ["sed", "sed -f script.sed f"],
  ["sed", "sed '/a/{p;w out\n}' f"],
  ["awk", "awk '{system(\"id\")}' f"],
  ["awk", "awk '{ print | \"sh\" }' f"],
  ["awk", "awk 'BEGIN { \"id\" | getline x }'"],
  ["awk", "awk '{ print > \"out\" }' f"],
  ["awk", 'awk \'{ printf "%s", $0 >> "out" }\' f'],
  ["awk", "awk -f prog.awk f"],
  ["gawk", "gawk -i inplace '{print}' f"],
  ["gawk", "gawk --include=inplace '{print}' f"],
  ["gawk", "gawk -e 'BEGIN{system(\"id\")}'"],
  ["gawk", "gawk '@load \"x\"'"],
  ["tar", "tar --to-command=sh -xf a.tar"],
  ["tar", "tar --to-com sh -xf a.tar"],
  ["tar", "tar --use-compress-program=sh -xf a.tar"],
  ["tar", "tar -I sh -xf a.tar"],
  ["tar", "tar -xIsh -f a.tar"],
  ["tar", "tar xIf sh a.tar"],
  ["tar", "tar --checkpoint=1 --checkpoint-action=exec=id -cf a.tar ."],
  ["tar", "tar -F sh -cf a.tar ."],
  ["git", "git -c core.pager=id log"],
  ["git", "git -ccore.pager=id log"],
  ["git", "git --config-env core.pager=X log"],
  ["git", "git --exec-path=. log"],
  ["git", "git clone --upload-pack=id x y"],
  ["git", "git clone -u id x y"],
  ["git", "git clone --template=t x y"],
  ["git", "git fetch --upload-pack id origin"],
  ["git", "git ls-remote -u id origin"],
  ["git", "git push --receive-pack=id origin"],
  ["git", "git rebase --exec id main"],
  ["git", "git rebase -x id main"],
  ["git", "git grep -O id x"],
  ["git", "git diff --ext-diff"],
  ["git", "git log --output=out"],
  ["git", "git bisect run id"],
  ["git", "git submodule foreach id"],
  ["git", "git config core.pager id"],
  ["git", "git difftool"],
  ["rsync", "rsync -e sh a b"],
  ["rsync", "rsync -avze sh a b"],
  ["rsync", "rsync --rsh=sh a b"],
  ["rsync", "rsync --rsync-path=id a host:b"],
  ["zip", "zip -T a.zip f"],
  ["zip", "zip -T -TT id a.zip f"],
  ["zip", "zip --unzip-command id -T a.zip f"],
  ["less", "less f"],
  ["more", "more f"],
  ["vim", "vim -c '!id' f"],
  ["vi", "vi f"],
  ["env", "env -S 'id'"],
  ["perl", "perl -e 'system 1'"],
  ["perl", "perl -lne print f"],
  ["perl", "perl -pi -e s/a/b/ f"],
  ["perl", "perl -MPOSIX f.pl"],
  ["perl", "perl"],
  ["python3", "python3 -c 'import os'"],
  ["python3", "python3 -Ic 'import os'"],
  ["python3", "python3 -"],
  ["python3", "python3"],
  ["python", "python -c 1"],
  ["node", "node -e 1"],
  ["node", "node --eval=1"],
  ["node", "node -r ./x.js app.js"],
  ["ruby", "ruby -e 1"],
  ["make", "make"],
  ["make", "make -n test"],
  ["sort", "sort -o out f"],
  ["sort", "sort --compress-program=sh f"],
  ["npm", "npm --script-shell=./x.sh test"],
  ["cargo", "cargo --config 'target.x.runner=\"id\"' run"],
  ["kubectl", "kubectl --kubeconfig=./k get pods"],
];

describe("options that make an allowed program write or run are asked about", () => {
  it.each(WRITE_OR_RUN)("%s allowed: %s asks", (program, line) => {
    const rules: PolicyRule[] = [
      { name: "allowed", tool: "run_command", effect: "allow", command_prefixes: [program] },
    ];
    const d = exec(rules, line);
    if (d.effect !== "ask") programCounts.unflagged++;
    expect(d.effect).toBe("ask");
    expect(d.rule).not.toBe("allowed");
    // A person's say-so is not a way past a deny on the program.
    expect(exec([...rules, { tool: "run_command", effect: "deny", command_prefixes: [program] }], line).effect).toBe(
      "deny",
    );
  });

  it("the same programs without such options stay allowed", () => {
    for (const [program, line] of [
      ["find", "find . -name '*.ts' -type f"],
      ["sed", "sed -n '1,5p' f"],
      ["sed", "sed -e 's/hello/world/g' -e '/^#/d' f"],
      ["sed", "sed 's/[/]/x/;y/abc/xyz/' f"],
      ["awk", "awk '$3 > 100 { print $1 }' f"],
      ["awk", "awk -F: '{ print ($1 > 2) }' f"],
      ["awk", "awk 'a || b' f"],
      ["tar", "tar -tzf a.tar.gz"],
      ["tar", "tar --checkpoint=10 -tf a.tar"],
      ["git", "git -C sub --no-pager log --oneline"],
      ["git", "git config --get user.name"],
      ["python3", "python3 script.py -c x"],
      ["perl", "perl script.pl -e"],
      ["sort", "sort -k2 -t, f"],
      ["rsync", "rsync -av a/ b/"],
    ]) {
      expect(exec([{ tool: "run_command", effect: "allow", command_prefixes: [program!] }], line!), line).toEqual({
        effect: "allow",
        rule: "rule[0]",
      });
    }
  });

  it("every sed script real sed refuses to run sandboxed for writing or executing is flagged", () => {
    const addr = fc.constantFrom("", "1", "$", "/x/", "\\,x,", "1,3", "/a/,/b/", "2~3", "/[/]/", "1!");
    const delim = fc.constantFrom("/", "|", ",", "#", "x");
    const sFlags = fc.constantFrom("", "g", "p", "2", "I", "e", "w out", "gw out", "pe", "ge");
    const cmd = fc.oneof(
      fc.constantFrom(
        "p",
        "d",
        "n",
        "=",
        "q",
        "l",
        "h;G",
        "w out",
        "W out",
        "e id",
        "e",
        "a text",
        "i\\\ntext",
        "y/ab/cd/",
      ),
      fc
        .tuple(delim, fc.constantFrom("a", "[/|,#x]", "\\/", "b.c"), fc.constantFrom("", "id", "\\n"), sFlags)
        .map(([d, re, rep, f]) => `s${d}${re.replaceAll(d === "/" ? "" : d, "")}${d}${rep}${d}${f}`),
    );
    const script = fc
      .array(fc.tuple(addr, cmd, fc.constantFrom(";", "\n")), { minLength: 1, maxLength: 4 })
      .map((parts) =>
        parts.map(([a, c, sep]) => `${a}${c}${c.includes("\n") || /[wWe] |^[aic]/.test(c) ? "\n" : sep}`).join(""),
      );
    const rules: PolicyRule[] = [{ tool: "run_command", effect: "allow", command_prefixes: ["sed"] }];
    fc.assert(
      fc.property(script, (s) => {
        programCounts.inputs++;
        const r = spawnSync("sed", ["--sandbox", "-n", "-e", s], { input: "", encoding: "utf8" });
        const refused = /disabled in sandbox mode/.test(r.stderr);
        const flagged = exec(rules, `sed -n -e ${q(s)}`).effect !== "allow";
        if (refused) programCounts.sedRefused++;
        if (r.status === 0 && flagged) programCounts.sedFalseAlarms++;
        if (refused && !flagged) programCounts.unflagged++;
        return !refused || flagged;
      }),
      { numRuns: 300 },
    );
    expect(programCounts.sedRefused).toBeGreaterThan(50);
  });
});
