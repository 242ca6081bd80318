// A secret that appears while a command runs: the masks are mounts made at the
// command's start, so another process (a second command, the person, an editor)
// creating `late/.env` during the run puts it where the running command can read
// it. Generated variants: secret names × how the file appears × how the command
// reads it. Whatever the command did with it, its output must not reach the model.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { rig, type Rig } from "../helpers.js";

const NAMES = [".env", ".env.local", "id_rsa", "server.pem", "credentials.json"] as const;
/**
 * How the secret appears: written in place, renamed onto its name, hard-linked
 * from a file outside, or renamed over a secret that was there (and masked) at
 * the start: the kernel detaches a mount whose path is replaced.
 */
const HOW = ["write", "rename", "link", "over"] as const;
/** What the command does once it sees the file. */
const READS = [
  (f: string) => `cat ${f}`,
  (f: string) => `base64 ${f}`,
  (f: string) => `od -c ${f} | head -20`,
  (f: string) => `while read -r l; do echo "\${l#?}"; done < ${f}`,
] as const;

/**
 * The other process: waits for the command to say it has started (the masks
 * are in place by then), then makes the secret appear the way `how` says.
 */
const CREATOR = `
const fs = require("node:fs");
const [dir, name, how, canary, outside] = process.argv.slice(1);
const started = dir + "/started";
const go = () => {
  const target = dir + "/" + name;
  if (how === "write") fs.writeFileSync(target, canary + "\\n");
  else if (how === "rename" || how === "over") { fs.writeFileSync(dir + "/.tmp-" + process.pid, canary + "\\n"); fs.renameSync(dir + "/.tmp-" + process.pid, target); }
  else { const src = outside + "/src-" + process.pid; fs.writeFileSync(src, canary + "\\n"); fs.linkSync(src, target); }
};
const poll = () => (fs.existsSync(started) ? go() : setTimeout(poll, 10));
poll();
`;

let r: Rig;
let n = 0;
const counts = { runs: 0, leaks: 0, withheld: 0 };

beforeAll(async () => {
  r = await rig({ policy: { rules: [{ name: "cmds", tool: "run_command", effect: "allow" }] } });
});
afterAll(async () => {
  await r?.cleanup();
});

function creator(dir: string, name: string, how: string, canary: string): Promise<number | null> {
  const child = spawn(process.execPath, ["-e", CREATOR, dir, name, how, canary, r.outside], { stdio: "ignore" });
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

describe("a secret created while a command runs", () => {
  it("never reaches the model in the command's output (names × ways it appears × ways it is read)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...NAMES),
        fc.constantFrom(...HOW),
        fc.integer({ min: 0, max: READS.length - 1 }),
        fc.stringMatching(/^[0-9a-f]{12,24}$/),
        async (name, how, read, salt) => {
          const canary = `CANARY-${salt}-${++n}`;
          const dir = join(r.ws, `late${n}`);
          mkdirSync(dir);
          const rel = `late${n}/${name}`;
          if (how === "over") writeFileSync(join(dir, name), "masked-at-start\n");
          const made = creator(dir, name, how, canary);
          const res = await r.call("run_command", {
            // Until it has content (a mask is /dev/null, empty), and not for ever if it never shows.
            command: `touch late${n}/started; i=0; until [ -s ${rel} ] || [ $i -gt 200 ]; do sleep 0.05; i=$((i+1)); done; ${READS[read]!(rel)}; echo end-of-run`,
            timeout_ms: 20_000,
          });
          expect(await made).toBe(0);
          counts.runs++;
          const text = res.content;
          // The canary, and its base64 (of its first bytes: the encoding shifts with the alignment) are not there.
          const b64 = Buffer.from(`${canary}\n`).toString("base64").slice(0, 16);
          if (text.includes(canary.slice(8)) || text.includes(b64) || /C\s+A\s+N\s+A\s+R\s+Y/.test(text))
            counts.leaks++;
          expect(text).not.toContain(canary.slice(8));
          expect(text).not.toContain(b64);
          // Said, not silently emptied: the model learns why and that the file is masked from now on.
          expect(text).toContain(`output withheld: a secret file appeared in the workspace while the command ran`);
          expect(text).toContain(join(r.ws, rel));
          counts.withheld++;
          // The next command no longer sees it at all.
          const again = await r.call("run_command", { command: `cat ${rel}; echo rc=$?` });
          expect(again.content).not.toContain(canary.slice(8));
          expect(again.content).not.toContain("output withheld");
          rmSync(dir, { recursive: true, force: true });
        },
      ),
      { numRuns: 40 },
    );
    expect(counts).toEqual({ runs: 40, leaks: 0, withheld: 40 });
  }, 240_000);

  it("a command during which no secret appears keeps its output, with the secrets that were there masked", async () => {
    writeFileSync(join(r.ws, ".env"), "EARLY-SECRET-91\n");
    const res = await r.call("run_command", { command: "cat .env; echo visible-output" });
    expect(res.content).toContain("visible-output");
    expect(res.content).not.toContain("EARLY-SECRET-91");
    expect(res.content).not.toContain("output withheld");
  });
});
