import { afterEach, describe, expect, it } from "vitest";
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigError, loadConfig, parseConfig } from "@boxmaker/common";
import { brokerConfigSchema, parseBrokerConfig } from "../../src/config.js";
import { Broker } from "../../src/broker.js";
import { ProposalStore } from "../../src/staging.js";
import { BlobStore } from "../../src/blobs.js";
import { silent } from "../helpers.js";
import { tempDir } from "../../../../test/support/tmp.js";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));
const MAIN = join(ROOT, "services/brokerd/dist/main.js");

let cleanup: (() => void) | undefined;
afterEach(() => {
  cleanup?.();
  cleanup = undefined;
});

describe("bad files are quarantined, not fatal", () => {
  it("an empty, torn or foreign proposal file is moved aside; the others load", () => {
    const t = tempDir("bxq-");
    cleanup = t.cleanup;
    const dir = join(t.dir, "proposals");
    const good = new ProposalStore(dir).stage({
      session_id: "s",
      call_id: "c",
      tool: "write_file",
      arguments_json: "{}",
      preview: "",
      rule: "r",
      checks: {},
    });
    writeFileSync(join(dir, "p-empty.json"), "");
    writeFileSync(join(dir, "p-torn.json"), '{"id": "p-torn", "sta');
    writeFileSync(join(dir, "p-null.json"), "null");
    writeFileSync(join(dir, "p-other.json"), JSON.stringify({ ...good, id: "p-not-this-name" }));
    const seen: string[] = [];
    const store = new ProposalStore(dir, (f) => seen.push(f));
    expect(store.get(good.id)?.state).toBe("pending");
    expect(seen.sort()).toEqual(["p-empty.json", "p-null.json", "p-other.json", "p-torn.json"]);
    expect(readdirSync(join(dir, "quarantine"))).toHaveLength(4);
    expect(readdirSync(dir).filter((f) => f.endsWith(".json"))).toEqual([`${good.id}.json`]);
  });
});

describe("a damaged blob is set aside, not served", () => {
  it("a blob whose content no longer matches its hash is refused and moved to quarantine/", () => {
    const t = tempDir("bxq-");
    cleanup = t.cleanup;
    const store = new BlobStore(join(t.dir, "blobs"));
    const h = store.put("the whole text\n");
    writeFileSync(join(t.dir, "blobs", h.slice(0, 2), h), "tampered");
    expect(() => store.get(h)).toThrow(/damaged/);
    expect(readdirSync(join(t.dir, "blobs", "quarantine"))).toHaveLength(1);
    expect(store.has(h)).toBe(false);
    expect(new BlobStore(join(t.dir, "blobs")).has(h)).toBe(false);
  });
});

describe("config: every bad config is one line, exit 2", () => {
  it("a file holding null, an array or a number is refused, not run on defaults", () => {
    const t = tempDir("bxc-");
    cleanup = t.cleanup;
    for (const text of ["null", "[]", "42", '"x"']) {
      const p = join(t.dir, "c.json");
      writeFileSync(p, text);
      expect(() => loadConfig(brokerConfigSchema, p)).toThrow(ConfigError);
      expect(() => loadConfig(brokerConfigSchema, p)).toThrow(/must be one JSON object/);
    }
    expect(() => parseConfig(brokerConfigSchema, null)).toThrow(ConfigError);
  });

  it("brokerd refuses (one line, exit 2): a long socket path, state or socket inside a workspace, null, an uncreatable state dir", () => {
    execFileSync("npx", ["tsc", "-b", "services/brokerd"], { cwd: ROOT, stdio: "inherit" });
    const t = tempDir("bxc-");
    cleanup = t.cleanup;
    const ws = join(t.dir, "ws");
    mkdirSync(ws);
    writeFileSync(join(t.dir, "file"), "");
    const cases: Array<[unknown, RegExp]> = [
      [null, /must be one JSON object/],
      [
        { socket: join(t.dir, "x".repeat(120), "b.sock"), state_dir: join(t.dir, "s"), workspace_roots: [ws] },
        /limited to 107 bytes/,
      ],
      [
        { socket: join(ws, "run", "b.sock"), state_dir: join(t.dir, "s"), workspace_roots: [ws] },
        /key "socket": .* lies inside the workspace root/,
      ],
      [
        { socket: join(t.dir, "b.sock"), state_dir: join(ws, ".state"), workspace_roots: [ws] },
        /key "state_dir": .* lies inside the workspace root/,
      ],
      [
        { socket: join(t.dir, "b.sock"), state_dir: join(t.dir, "file", "s"), workspace_roots: [ws] },
        /key "state_dir": cannot create/,
      ],
      [
        {
          socket: join(t.dir, "b.sock"),
          state_dir: join(t.dir, "s"),
          workspace_roots: [ws],
          sandbox: { limits: { max_processes: 0 } },
        },
        /sandbox\.limits\.max_processes/,
      ],
      [
        {
          socket: join(t.dir, "run", "b.sock"),
          state_dir: join(t.dir, "s"),
          workspace_roots: [ws],
          sandbox: { ro_paths: ["/usr", t.dir] },
        },
        /sandbox\.ro_paths.*socket directory/,
      ],
      [
        { socket: "/proc/b.sock", state_dir: join(t.dir, "s"), workspace_roots: [ws] },
        /key "socket": cannot listen on \/proc\/b\.sock/,
      ],
      [
        { socket: join(t.dir, "b.sock"), state_dir: join(t.dir, "s"), workspace_roots: [join(t.dir, "missing")] },
        /key "workspace_roots": .* does not exist/,
      ],
      [
        { socket: join(t.dir, "b.sock"), state_dir: join(t.dir, "s"), workspace_roots: [join(t.dir, "file")] },
        /key "workspace_roots": .* is not a directory/,
      ],
    ];
    for (const [cfg, want] of cases) {
      const p = join(t.dir, "c.json");
      writeFileSync(p, JSON.stringify(cfg));
      const r = spawnSync(process.execPath, [MAIN, "--config", p], { encoding: "utf8", timeout: 20_000 });
      expect(r.status, r.stderr).toBe(2);
      // One line of error; structured log lines before it (e.g. "bwrap missing" on a machine without it) are not the error.
      expect(
        r.stderr
          .trim()
          .split("\n")
          .filter((l) => !l.startsWith('{"level":')),
      ).toHaveLength(1);
      expect(r.stderr).toMatch(want);
    }
    expect(existsSync(join(ws, "run"))).toBe(false);
  }, 60_000);

  it("Broker.open refuses a state dir inside a workspace root", async () => {
    const t = tempDir("bxc-");
    cleanup = t.cleanup;
    const ws = join(t.dir, "ws");
    mkdirSync(ws);
    const config = parseBrokerConfig({
      socket: join(t.dir, "b.sock"),
      state_dir: join(ws, "state"),
      workspace_roots: [ws],
      log_level: "silent",
    });
    await expect(Broker.open(config, { log: silent })).rejects.toThrow(ConfigError);
  });
});
