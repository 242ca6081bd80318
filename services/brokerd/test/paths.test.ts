import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULT_SECRET_PATTERNS } from "../src/config.js";
import { PathGuard, canonicalize } from "../src/policy/paths.js";
import { Refused } from "../src/errors.js";
import { tempDir } from "../../../test/support/tmp.js";

let t: ReturnType<typeof tempDir>;
let ws: string;
let guard: PathGuard;

const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(Refused);
    return (err as Refused).rule;
  }
  throw new Error("not refused");
};

beforeEach(() => {
  t = tempDir("bxp-");
  ws = join(realpathSync(t.dir), "ws");
  mkdirSync(join(ws, "src"), { recursive: true });
  mkdirSync(join(t.dir, "outside"));
  writeFileSync(join(ws, "src/a.ts"), "a");
  guard = new PathGuard([ws], [join(ws, "boxmaker-config")], DEFAULT_SECRET_PATTERNS);
});
afterEach(() => t.cleanup());

describe("path guard", () => {
  it("resolves relative and absolute paths inside the workspace, existing or not", () => {
    expect(guard.resolve("src/a.ts", { write: false })).toMatchObject({
      abs: join(ws, "src/a.ts"),
      rel: "src/a.ts",
      exists: true,
    });
    expect(guard.resolve(join(ws, "src/new/b.ts"), { write: true })).toMatchObject({
      rel: "src/new/b.ts",
      exists: false,
    });
    expect(guard.resolve("src/../src/a.ts", { write: false }).rel).toBe("src/a.ts");
    expect(guard.resolve(".", { write: false }).rel).toBe(".");
  });

  it("refuses traversal, absolute paths outside, NUL bytes", () => {
    expect(refusal(() => guard.resolve("../outside/x", { write: false }))).toBe("path:outside-workspace");
    expect(refusal(() => guard.resolve("/etc/passwd", { write: false }))).toBe("path:outside-workspace");
    expect(refusal(() => guard.resolve("src/../../ws2/x", { write: true }))).toBe("path:outside-workspace");
    expect(refusal(() => guard.resolve("a\0b", { write: false }))).toBe("path:invalid");
  });

  it("resolves symlinks before checking: links out of the workspace are refused, links within are followed", () => {
    symlinkSync(join(t.dir, "outside"), join(ws, "out"));
    symlinkSync("/etc/hostname", join(ws, "host"));
    symlinkSync(join(ws, "src"), join(ws, "srclink"));
    expect(refusal(() => guard.resolve("out/new-file", { write: true }))).toBe("path:symlink-escape");
    expect(refusal(() => guard.resolve("host", { write: false }))).toBe("path:symlink-escape");
    expect(guard.resolve("srclink/a.ts", { write: false }).abs).toBe(join(ws, "src/a.ts"));
  });

  it("refuses dangling symlinks, which could be created outside later", () => {
    symlinkSync(join(t.dir, "outside", "later"), join(ws, "dangling"));
    expect(refusal(() => guard.resolve("dangling", { write: true }))).toMatch(/^path:/);
  });

  it("refuses secrets by the name asked for and by the name resolved", () => {
    writeFileSync(join(ws, ".env"), "TOKEN=x");
    writeFileSync(join(ws, "innocent.txt"), "x");
    symlinkSync(join(ws, ".env"), join(ws, "config.txt"));
    symlinkSync(join(ws, "innocent.txt"), join(ws, "id_rsa"));
    expect(refusal(() => guard.resolve(".env", { write: false }))).toBe("path:secret");
    expect(refusal(() => guard.resolve("config.txt", { write: false }))).toBe("path:secret");
    expect(refusal(() => guard.resolve("id_rsa", { write: false }))).toBe("path:secret");
    expect(refusal(() => guard.resolve("deep/.ssh/known_hosts", { write: true }))).toBe("path:secret");
  });

  it("never lets a protected path be written, though it may be read", () => {
    expect(guard.resolve("boxmaker-config/x.json", { write: false }).rel).toBe("boxmaker-config/x.json");
    expect(refusal(() => guard.resolve("boxmaker-config/x.json", { write: true }))).toBe("path:protected");
    expect(guard.protectedInside(ws)).toEqual([join(ws, "boxmaker-config")]);
  });

  it("canonicalizes through a symlinked prefix for paths that do not exist yet", () => {
    symlinkSync(join(ws, "src"), join(t.dir, "alias"));
    expect(canonicalize(join(t.dir, "alias", "x", "y.ts"))).toBe(join(ws, "src", "x", "y.ts"));
  });

  it("with no workspace configured, nothing is accessible", () => {
    const none = new PathGuard([], [], []);
    expect(refusal(() => none.resolve("a", { write: false }))).toBe("path:no-workspace");
  });
});
