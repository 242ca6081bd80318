import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { execFileSync } from "node:child_process";
import { resolve } from "node:path";
import { acceptCommand, differences, refusalMessage } from "../src/server-check/contract-refusal.js";
import { notRun } from "../src/server-check/self-test.js";

const contract = { template_sha256: "a".repeat(64), n_ctx_per_slot: 131072, total_slots: 3 };
const failed = {
  ...notRun(contract),
  ran: true,
  actualTemplateSha256: "b".repeat(64),
  actualNCtx: 32768,
  actualTotalSlots: 2,
  mismatches: ["three lines"],
};
const systemd = { NOTIFY_SOCKET: "/run/systemd/notify" };

describe("the command that accepts a server", () => {
  it("under systemd with the installed config: accept, then systemctl restart", () => {
    expect(acceptCommand("/etc/boxmaker/inferproxy.json", systemd)).toBe(
      "`boxmaker contract accept && systemctl restart boxmaker-inferproxy`",
    );
    expect(acceptCommand("/etc/boxmaker/../boxmaker/inferproxy.json", systemd)).toBe(
      "`boxmaker contract accept && systemctl restart boxmaker-inferproxy`",
    );
  });

  it("another config file is named with --config; without systemd, `boxmaker up`'s flag is named too", () => {
    expect(acceptCommand("/srv/bx/inferproxy.json", systemd)).toBe(
      "`boxmaker contract accept --config /srv/bx/inferproxy.json && systemctl restart boxmaker-inferproxy`",
    );
    const plain = acceptCommand("/srv/bx/inferproxy.json", { NOTIFY_SOCKET: "" });
    expect(plain).toContain("`boxmaker contract accept --config /srv/bx/inferproxy.json` and a restart of inferproxy");
    expect(plain).toContain("`boxmaker up --accept-server-contract`");
    expect(acceptCommand(undefined, {})).toBe("`boxmaker up --accept-server-contract`");
  });

  it("a config in the Nix store is the module's: the options, not a file", () => {
    expect(acceptCommand("/nix/store/abc-inferproxy.json", systemd)).toMatch(
      /services\.boxmaker.*nixos-rebuild switch/,
    );
  });

  it("any config path survives the shell: the word the shell reads is the path", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", minLength: 1, maxLength: 40 }), (name) => {
        fc.pre(!/[\0/]/.test(name) && name !== "." && name !== "..");
        const path = `/tmp/${name}`;
        const cmd = acceptCommand(path, systemd).slice(1, -1);
        const arg = cmd.slice("boxmaker contract accept --config ".length, cmd.indexOf(" && systemctl"));
        // sh's own word splitting is the oracle.
        const words = execFileSync("sh", ["-c", `printf '%s\\0' ${arg}`], { encoding: "utf8" }).split("\0");
        expect(words).toEqual([resolve(path), ""]);
      }),
      { numRuns: 200 },
    );
  });
});

describe("the refusal", () => {
  it("names every difference by its config key, expected then the server's", () => {
    expect(differences(failed)).toBe(
      `template_sha256: expected ${"a".repeat(12)}…, server has ${"b".repeat(12)}…; ` +
        "n_ctx_per_slot: expected 131072, server has 32768; total_slots: expected 3, server has 2",
    );
  });

  it("fits what loopd shows a person (500 characters) with a long model path, command included", () => {
    const accept = acceptCommand("/etc/boxmaker/inferproxy.json", systemd);
    const m = refusalMessage("unix:/run/boxmaker/llama.sock", failed, `/var/lib/models/${"x".repeat(60)}.gguf`, accept);
    expect(m.length).toBeLessThanOrEqual(500);
    expect(m).toContain(accept);
    expect(m.indexOf(accept)).toBeLessThan(m.indexOf("It serves"));
  });
});
