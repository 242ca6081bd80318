// nix/package.nix, evaluated with stand-ins for buildNpmPackage and importNpmLock
// (test/nix/eval-package.nix): no hash to update by hand, Node 24, every locked
// package fetchable by URL and integrity, and the npm workspaces linked into
// node_modules from the build tree. It cannot build here (no nixpkgs, no
// network): `nix build .#default` does that.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { requires } from "../support/requirements.js";
import { repoRoot } from "../support/stack.js";
import { DAEMON_NODE_FLAGS } from "@boxmaker/common";

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  name?: string;
}
interface Evaluated {
  pname: string;
  version: string;
  nodejs: string;
  npmConfigHook: string;
  npmBuildScript: string;
  hasNpmDepsHash: boolean;
  preBuild: string;
  installPhase: string;
  importNpmLock: {
    npmRoot: string;
    src: string;
    package: { workspaces: string[] };
    packageLock: { packages: Record<string, LockEntry> };
  };
}

const ok = requires("nix/package.nix evaluation", ["nix-instantiate"]);

describe.skipIf(!ok)("nix/package.nix", () => {
  const evaluate = (): Evaluated => {
    const r = spawnSync("nix-instantiate", ["--eval", "--strict", "--json", join("test", "nix", "eval-package.nix")], {
      encoding: "utf8",
      cwd: repoRoot,
      timeout: 60_000,
    });
    if (r.status !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout) as Evaluated;
  };
  const pkgJson = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
    version: string;
    workspaces: string[];
  };
  const lock = JSON.parse(readFileSync(join(repoRoot, "package-lock.json"), "utf8")) as {
    packages: Record<string, LockEntry>;
  };

  it("uses importNpmLock (no npmDepsHash) and its npmConfigHook, with Node 24, over the filtered source", () => {
    const p = evaluate();
    expect(p.pname).toBe("boxmaker");
    expect(p.version).toBe(pkgJson.version);
    expect(p.hasNpmDepsHash).toBe(false);
    expect(p.npmConfigHook).toBe("importNpmLock.npmConfigHook");
    expect(p.nodejs).toBe("nodejs-24");
    expect(p.npmBuildScript).toBe("build");
    expect(p.importNpmLock.npmRoot).toBe(p.importNpmLock.src);
    expect(p.installPhase).toContain("/nix/store/00000000000000000000000000000000-nodejs-24/bin/node $out/bin/$1");
    expect(p.installPhase).toContain("wrap boxmaker services/cli/dist/bundle/boxmaker.js");
    // The daemons' wrappers pass the stack's node flags; the CLI's does not need them.
    for (const d of ["inferproxy", "brokerd", "loopd"]) {
      expect(p.installPhase).toContain(
        `wrap boxmaker-${d} services/${d}/dist/main.js "${DAEMON_NODE_FLAGS.join(" ")}"`,
      );
    }
  });

  it("gives every locked registry package its registry tarball URL, next to the lock's integrity", () => {
    const { packages } = evaluate().importNpmLock.packageLock;
    expect(Object.keys(packages).sort()).toEqual(Object.keys(lock.packages).sort());
    for (const [path, entry] of Object.entries(packages)) {
      const original = lock.packages[path]!;
      if (!path.includes("node_modules/") || original.link) {
        expect(entry, path).toEqual(original);
        continue;
      }
      const name = original.name ?? path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
      expect(entry, path).toEqual({
        ...original,
        resolved:
          original.resolved ?? `https://registry.npmjs.org/${name}/-/${name.split("/").at(-1)}-${original.version}.tgz`,
      });
      expect(entry.integrity, path).toMatch(/^sha(256|384|512)-/);
    }
  });

  it("links every workspace into node_modules before the build and after pruning", () => {
    const p = evaluate();
    const links = Object.entries(lock.packages).filter(([, e]) => e.link);
    expect(links.map(([, e]) => e.resolved).sort()).toEqual([...pkgJson.workspaces].sort());
    for (const [path, e] of links) {
      const line = `ln -sr ${e.resolved} ${path}`;
      expect(p.preBuild).toContain(line);
      expect(p.installPhase.indexOf(line)).toBeGreaterThan(p.installPhase.indexOf("npm prune"));
    }
    // Ship the original package.json, not the one pointing into the store.
    expect(p.installPhase).toContain("cp .package.json.orig package.json");
  });
});
