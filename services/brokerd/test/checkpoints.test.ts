import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Checkpoints } from "../src/checkpoints.js";
import { PathGuard } from "../src/policy/paths.js";
import { tempDir } from "../../../test/support/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let ws: string;
let guard: PathGuard;
beforeEach(() => {
  tmp = tempDir();
  ws = join(tmp.dir, "ws");
  mkdirSync(ws);
  guard = new PathGuard([ws], [join(tmp.dir, "state")], []);
});
afterEach(() => tmp.cleanup());

function applied(cp: Checkpoints, rel: string, before: string | null, after: string, session = "s1") {
  writeFileSync(join(ws, rel), after);
  const p = guard.resolve(rel, { write: true });
  return cp.record(
    {
      session_id: session,
      call_id: `call-${rel}`,
      tool: "write_file",
      proposal_id: "",
      root: p.root,
      rel: p.rel,
      abs: p.abs,
    },
    before,
    after,
  );
}

describe("checkpoints", () => {
  it("lists a session's changes with diffs and undoes the last one, newest first", () => {
    const cp = new Checkpoints(join(tmp.dir, "state", "checkpoints"));
    applied(cp, "a.txt", "one\n", "two\n");
    applied(cp, "b.txt", null, "new\n");
    applied(cp, "x.txt", null, "other session\n", "s2");
    expect(cp.list("s1").map((c) => c.rel)).toEqual(["a.txt", "b.txt"]);
    expect(cp.diff(cp.list("s1")[0]!)).toMatch(/-one\n\+two/);

    const first = cp.undo("s1", 1, false, guard, 1 << 20);
    expect(first.map((o) => [o.change.rel, o.result])).toEqual([["b.txt", "deleted"]]);
    expect(existsSync(join(ws, "b.txt"))).toBe(false);
    const second = cp.undo("s1", 1, false, guard, 1 << 20);
    expect(second.map((o) => [o.change.rel, o.result])).toEqual([["a.txt", "restored"]]);
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("one\n");
    expect(cp.undo("s1", 0, false, guard, 1 << 20)).toEqual([]);

    // Survives a restart: what was undone stays undone.
    const again = new Checkpoints(join(tmp.dir, "state", "checkpoints"));
    expect(again.list("s1").every((c) => c.undone_unix_ms)).toBe(true);
    expect(again.list("s2")[0]!.undone_unix_ms).toBeUndefined();
  });

  it("refuses a file that changed since, unless forced", () => {
    const cp = new Checkpoints(join(tmp.dir, "state", "checkpoints"));
    applied(cp, "a.txt", "orig\n", "model\n");
    writeFileSync(join(ws, "a.txt"), "person edited\n");
    const [refused] = cp.undo("s1", 1, false, guard, 1 << 20);
    expect(refused).toMatchObject({ result: "refused" });
    expect(refused!.message).toContain("a.txt changed since this change was applied");
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("person edited\n");
    const [forced] = cp.undo("s1", 1, true, guard, 1 << 20);
    expect(forced).toMatchObject({ result: "restored" });
    expect(readFileSync(join(ws, "a.txt"), "utf8")).toBe("orig\n");
  });
});
