import { ToolDecision } from "@boxmaker/common";
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { fixFor, unwritableRoots } from "../src/workspace-writable.js";
import { rig, type Rig } from "./helpers.js";
import { tempDir } from "../../../test/support/tmp.js";

let r: Rig | undefined;
afterEach(async () => {
  await r?.cleanup();
  r = undefined;
});

describe("a workspace root brokerd cannot write", () => {
  it("is found at start and named with its fix", () => {
    const t = tempDir();
    try {
      const ok = join(t.dir, "ok");
      mkdirSync(ok);
      expect(unwritableRoots([ok])).toEqual([]);
      expect(fixFor("/w", "EROFS")).toMatch(/ReadWritePaths=\/w/);
      expect(fixFor("/w", "EACCES")).toMatch(/may not write it \(EACCES\)/);
      // A read-only bind mount is what ProtectSystem=strict gives a root missing from ReadWritePaths=.
      const ro = join(t.dir, "ro");
      mkdirSync(ro);
      let mounted = false;
      try {
        execFileSync("mount", ["--bind", "-o", "ro", ro, ro], { stdio: "ignore" });
        execFileSync("mount", ["-o", "remount,bind,ro", ro], { stdio: "ignore" });
        mounted = true;
      } catch {
        /* not root or no mount: the EROFS case is covered by the message test above */
      }
      if (mounted) {
        try {
          expect(unwritableRoots([ro])).toEqual([{ root: ro, code: "EROFS", fix: fixFor(ro, "EROFS") }]);
        } finally {
          execFileSync("umount", [ro]);
        }
      }
    } finally {
      t.cleanup();
    }
  });

  it("an approved write there fails with what to do, not a temp file's EROFS path", async () => {
    r = await rig({ policy: { rules: [{ name: "w", tool: "write_file", effect: "allow" }] } }, ({ ws }) => {
      mkdirSync(join(ws, "locked"));
      writeFileSync(join(ws, "locked", "a.txt"), "x");
    });
    let mounted = false;
    try {
      execFileSync("mount", ["--bind", "-o", "ro", r.ws, r.ws], { stdio: "ignore" });
      execFileSync("mount", ["-o", "remount,bind,ro", r.ws], { stdio: "ignore" });
      mounted = true;
    } catch {
      chmodSync(join(r.ws, "locked"), 0o500);
    }
    try {
      const res = await r.call("write_file", { path: "locked/a.txt", content: "y" });
      expect(res.decision).toBe(ToolDecision.ALLOWED);
      expect(res.isError).toBe(true);
      if (mounted) expect(res.content).toMatch(/cannot be written \(EROFS\).*ReadWritePaths=/);
      expect(res.content).not.toMatch(/\.bx-/);
    } finally {
      if (mounted) execFileSync("umount", [r.ws]);
      else chmodSync(join(r.ws, "locked"), 0o700);
    }
  });
});
