import { describe, expect, it } from "vitest";
import fc from "fast-check";
import {
  chmodSync,
  chownSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { LLAMA_CONTRACT } from "@boxmaker/common/lite";
import {
  ContractFileError,
  contractChanges,
  contractForModel,
  readContractFile,
  writeContract,
} from "../src/contract-file.js";
import { UsageError } from "../src/errors.js";
import { tempDir } from "../../../test/support/tmp.js";

const server = { template_sha256: "e".repeat(64), n_ctx_per_slot: 32768, total_slots: 2 };
const defaults = {
  template_sha256: LLAMA_CONTRACT.templateSha256,
  n_ctx_per_slot: LLAMA_CONTRACT.nCtxPerSlot,
  total_slots: LLAMA_CONTRACT.slots,
};

describe("inferproxy's config file, as contract accept edits it", () => {
  it("keeps every other key, byte for byte as JSON, whatever the file holds; only contract's three keys change", () => {
    const t = tempDir("bxcf-");
    try {
      const other = fc.dictionary(
        fc.string({ maxLength: 12 }).filter((k) => k !== "contract"),
        fc.jsonValue({ maxDepth: 3 }),
        { maxKeys: 8 },
      );
      const extraContract = fc.dictionary(
        fc.string({ maxLength: 8 }).filter((k) => !["template_sha256", "n_ctx_per_slot", "total_slots"].includes(k)),
        fc.jsonValue({ maxDepth: 1 }),
        { maxKeys: 3 },
      );
      let n = 0;
      fc.assert(
        fc.property(other, extraContract, fc.integer({ min: 0o400, max: 0o777 }), (obj, extra, mode) => {
          const path = join(t.dir, `c${n++}.json`);
          const before = { ...obj, contract: extra };
          writeFileSync(path, JSON.stringify(before));
          chmodSync(path, mode);
          const file = readContractFile(path);
          // Keys the file leaves out are inferproxy's defaults, so those count as what it runs with.
          expect(file.contract).toEqual(defaults);
          writeContract(file, server);
          const after = JSON.parse(readFileSync(path, "utf8"));
          // As JSON sees it (-0 is written 0).
          expect(after).toEqual(JSON.parse(JSON.stringify({ ...before, contract: { ...extra, ...server } })));
          expect(statSync(path).mode & 0o7777).toBe(mode);
          expect(readContractFile(path).contract).toEqual(server);
        }),
        { numRuns: 150 },
      );
      // Nothing left beside the files.
      expect(readdirSync(t.dir).filter((f) => f.includes(".bx-"))).toEqual([]);
    } finally {
      t.cleanup();
    }
  });

  // Only root can give a file away; elsewhere the file is this user's and stays so.
  it.skipIf(process.getuid?.() !== 0)(
    "as root, the file keeps its owner and group (root:boxmaker 0640 in an install)",
    () => {
      const t = tempDir("bxcf-");
      try {
        const path = join(t.dir, "owned.json");
        writeFileSync(path, "{}");
        chownSync(path, 0, 65534);
        chmodSync(path, 0o640);
        writeContract(readContractFile(path), server);
        expect(statSync(path)).toMatchObject({ uid: 0, gid: 65534 });
        expect(statSync(path).mode & 0o777).toBe(0o640);
      } finally {
        t.cleanup();
      }
    },
  );

  it("a key named __proto__ stays a key, and nothing leaks onto objects", () => {
    const t = tempDir("bxcf-");
    try {
      const path = join(t.dir, "p.json");
      writeFileSync(path, '{"__proto__": {"polluted": true}, "socket": "/s"}');
      writeContract(readContractFile(path), server);
      const text = readFileSync(path, "utf8");
      expect(text).toContain('"__proto__"');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect(JSON.parse(text).socket).toBe("/s");
    } finally {
      t.cleanup();
    }
  });

  it("a symlinked config has its target replaced and the link kept; a Nix store path is refused", () => {
    const t = tempDir("bxcf-");
    try {
      mkdirSync(join(t.dir, "real"));
      const target = join(t.dir, "real", "inferproxy.json");
      writeFileSync(target, '{"log_level":"info"}');
      const link = join(t.dir, "inferproxy.json");
      symlinkSync(target, link);
      writeContract(readContractFile(link), server);
      expect(JSON.parse(readFileSync(target, "utf8")).contract).toEqual(server);
      expect(readContractFile(link).path).toBe(target);
      // NixOS: the unit's config is a store path (read-only) or absent from /etc; either way the module's options are named.
      expect(() => readContractFile("/nix/store/x-inferproxy.json")).toThrow(
        /services\.boxmaker contract options.*nixos-rebuild switch/,
      );
      expect(() => readContractFile(join(t.dir, "absent.json"))).toThrow(UsageError);
    } finally {
      t.cleanup();
    }
  });

  it("refuses what it cannot edit without guessing: not JSON, not an object, contract not an object, a directory", () => {
    const t = tempDir("bxcf-");
    try {
      for (const [text, why] of [
        ["{", /is not JSON/],
        ["[1]", /is not a JSON object/],
        ['{"contract": 3}', /"contract" is not an object/],
      ] as const) {
        const path = join(t.dir, "x.json");
        writeFileSync(path, text);
        expect(() => readContractFile(path)).toThrow(ContractFileError);
        expect(() => readContractFile(path)).toThrow(why);
        expect(readFileSync(path, "utf8")).toBe(text);
      }
      expect(() => readContractFile(t.dir)).toThrow(/is not a regular file/);
    } finally {
      t.cleanup();
    }
  });

  it("contractChanges lists exactly the keys that differ", () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.boolean(), (a, b, c) => {
        const to = {
          template_sha256: a ? "f".repeat(64) : server.template_sha256,
          n_ctx_per_slot: b ? 1 : server.n_ctx_per_slot,
          total_slots: c ? 9 : server.total_slots,
        };
        const keys = contractChanges(server, to).map((x) => x.key);
        expect(keys).toEqual(
          [a && "template_sha256", b && "n_ctx_per_slot", c && "total_slots"].filter(Boolean) as string[],
        );
      }),
    );
  });
});

describe("the contract table, as contract accept edits it", () => {
  it("each model keeps its own entry: a second model is added, the same model replaced in place, contract untouched", () => {
    const t = tempDir("bxcf-");
    try {
      const path = join(t.dir, "inferproxy.json");
      const legacy = { template_sha256: "c".repeat(64), n_ctx_per_slot: 8192, total_slots: 1 };
      writeFileSync(path, JSON.stringify({ socket: "/run/x.sock", contract: legacy }));
      const alpha = { template_sha256: "a".repeat(64), n_ctx_per_slot: 32768, total_slots: 2 };
      writeContract(readContractFile(path), alpha, { model: "alpha.gguf", probe_verdict: "ok" });
      writeContract(readContractFile(path), server, { model: "beta.gguf", probe_verdict: "warn" });
      let file = readContractFile(path);
      expect(file.contract).toEqual(legacy);
      expect(contractForModel(file, "alpha.gguf")).toEqual({ contract: alpha, entry: "alpha.gguf" });
      expect(contractForModel(file, "beta.gguf")).toEqual({ contract: server, entry: "beta.gguf" });
      expect(contractForModel(file, "gamma.gguf")).toEqual({ contract: legacy, entry: "" });

      // A key an operator added to an entry by hand survives its model being accepted again.
      const json = JSON.parse(readFileSync(path, "utf8"));
      json.contracts[0].note = "the 30B coder";
      writeFileSync(path, JSON.stringify(json));
      const alpha2 = { ...alpha, n_ctx_per_slot: 65536 };
      writeContract(readContractFile(path), alpha2, { model: "alpha.gguf", probe_verdict: "ok" });
      file = readContractFile(path);
      expect(file.entries).toEqual([
        { model: "alpha.gguf", ...alpha2, probe_verdict: "ok", note: "the 30B coder" },
        { model: "beta.gguf", ...server, probe_verdict: "warn" },
      ]);
    } finally {
      t.cleanup();
    }
  });

  it("refuses a table that is not one, or an entry missing a key, naming it", () => {
    const t = tempDir("bxcf-");
    try {
      const path = join(t.dir, "inferproxy.json");
      writeFileSync(path, JSON.stringify({ contracts: { model: "x" } }));
      expect(() => readContractFile(path)).toThrow(/"contracts" is not an array/);
      writeFileSync(path, JSON.stringify({ contracts: [{ model: "x", template_sha256: "a".repeat(64) }] }));
      expect(() => readContractFile(path)).toThrow(
        /contracts\[0\] needs model, template_sha256, n_ctx_per_slot and total_slots/,
      );
    } finally {
      t.cleanup();
    }
  });
});
