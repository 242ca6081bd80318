// The documented systemd install (docs/operations.md, INSTALL_HEADING) is the
// install: these checks keep its shell blocks runnable under sh, creating what
// they copy into, in an order that works on a fresh machine, and installing
// exactly the units and files deploy/ holds and the units read.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configSchema as inferproxySchema } from "../../services/inferproxy/src/config.js";
import { repoRoot } from "../support/stack.js";
import { checkInstall, INSTALL_HEADING, sectionBlocks, type Command } from "./install-doc.js";
import { execStart, readUnit, unitDir, value } from "./unit-file.js";

const doc = readFileSync(join(repoRoot, "docs", "operations.md"), "utf8");
const blocks = sectionBlocks(doc, INSTALL_HEADING);
const install = checkInstall(blocks);
const unitFiles = readdirSync(unitDir).filter((n) => /\.(service|target)$/.test(n));

/** Index of the first command matching, or -1. */
const first = (pred: (c: Command) => boolean) => install.commands.findIndex(pred);
const is = (c: Command, ...words: string[]) => words.every((w, i) => c.argv[i] === w);

describe(`docs/operations.md "${INSTALL_HEADING.slice(3)}"`, () => {
  it("is plain ```sh blocks, each valid sh, creating every directory it copies into, no && chains or bashisms", () => {
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    expect(install.problems).toEqual([]);
  });

  it("installs every unit of deploy/systemd, and nothing else, into /etc/systemd/system", () => {
    const units = [...install.copies].filter(([src]) => src.startsWith("deploy/systemd/"));
    expect(units.map(([src]) => src.slice("deploy/systemd/".length)).sort()).toEqual([...unitFiles].sort());
    for (const [src, dest] of units) expect(dest).toBe(`/etc/systemd/system/${src.slice("deploy/systemd/".length)}`);
    const elsewhere = [...install.copies.values()].filter((d) => d.startsWith("/etc/systemd/"));
    expect(elsewhere.length).toBe(units.length);
  });

  it("asks systemctl only about units deploy/systemd has", () => {
    expect(install.unitsNamed.length).toBeGreaterThan(0);
    for (const u of install.unitsNamed) expect(unitFiles).toContain(u);
    expect(install.unitsNamed).toEqual(expect.arrayContaining(["boxmaker.target", "boxmaker-llama-server.service"]));
  });

  it("installs every file the units read from /etc/boxmaker, and the sysusers file where systemd-sysusers reads it", () => {
    const installed = new Set(install.copies.values());
    const read = unitFiles.flatMap((n) => {
      const u = readUnit(n);
      const env = value(u, "Service", "EnvironmentFile")?.replace(/^-/, "");
      const words = u.has("Service") && value(u, "Service", "ExecStart") ? execStart(u) : [];
      const config = words.indexOf("--config") >= 0 ? words[words.indexOf("--config") + 1] : undefined;
      return [env, config].filter((f): f is string => !!f);
    });
    expect(read.length).toBeGreaterThanOrEqual(4);
    for (const f of read) expect(installed, f).toContain(f);
    expect(install.copies.get("deploy/sysusers.d/boxmaker.conf")).toBe("/etc/sysusers.d/boxmaker.conf");
  });

  it("runs in an order that works from a fresh machine", () => {
    const sysusersCopy = first((c) => c.argv.includes("deploy/sysusers.d/boxmaker.conf"));
    const sysusers = first((c) => is(c, "systemd-sysusers"));
    const firstGroupUse = first((c) => c.argv.includes("boxmaker") && (c.argv.includes("-g") || is(c, "usermod")));
    const lastUnitCopy = install.commands.findLastIndex((c) => c.argv.some((w) => w.startsWith("deploy/systemd/")));
    const reload = first((c) => is(c, "systemctl", "daemon-reload"));
    const modelSet = first((c) => is(c, "sed") && c.line.includes("LLAMA_MODEL="));
    const startLlama = first((c) => is(c, "systemctl", "start", "boxmaker-llama-server"));
    const show = first((c) => is(c, "boxmaker", "contract", "show"));
    const accept = first((c) => is(c, "boxmaker", "contract", "accept"));
    const stackStart = first(
      (c) => is(c, "systemctl") && c.argv.some((w) => w === "boxmaker.target" || w.startsWith("boxmaker-inferproxy")),
    );
    const status = first((c) => is(c, "boxmaker", "status"));
    for (const i of [sysusersCopy, sysusers, firstGroupUse, lastUnitCopy, reload, modelSet, startLlama, show, accept])
      expect(i).toBeGreaterThanOrEqual(0);
    expect(sysusersCopy).toBeLessThan(sysusers);
    expect(sysusers).toBeLessThan(firstGroupUse);
    expect(lastUnitCopy).toBeLessThan(reload);
    expect(reload).toBeLessThan(startLlama);
    expect(modelSet).toBeLessThan(startLlama);
    // The contract is adopted from the running server before inferproxy first checks it.
    expect(startLlama).toBeLessThan(show);
    expect(show).toBeLessThan(accept);
    expect(accept).toBeLessThan(stackStart);
    expect(stackStart).toBeLessThan(status);
  });

  it("links the CLI the package declares", () => {
    const link = install.commands.find((c) => is(c, "ln"));
    const bin = (
      JSON.parse(readFileSync(join(repoRoot, "services", "cli", "package.json"), "utf8")) as {
        bin: { boxmaker: string };
      }
    ).bin.boxmaker;
    expect(link?.argv.slice(-2)).toEqual([
      `/opt/boxmaker/services/cli/${bin.replace(/^\.\//, "")}`,
      "/usr/local/bin/boxmaker",
    ]);
  });

  it("calls the contract's fields by the names inferproxy's config uses", () => {
    const fields = Object.keys(
      (inferproxySchema as { properties: { contract: { properties: object } } }).properties.contract.properties,
    );
    expect(fields.sort()).toEqual(["n_ctx_per_slot", "template_sha256", "total_slots"]);
    for (const f of fields) expect(doc).toContain(`\`${f}\``);
    expect(doc).not.toMatch(/n_ctx per slot|template hash, n_ctx/);
  });
});

describe("the checks can fail: the install this section replaced", () => {
  // docs/operations.md before issue 24, verbatim.
  const old = `## Old

\`\`\`sh
sudo git clone … /opt/boxmaker && cd /opt/boxmaker
sudo npm ci && sudo npm run build
sudo cp deploy/sysusers.d/boxmaker.conf /etc/sysusers.d/ && sudo systemd-sysusers
sudo install -d -m 0750 -g boxmaker /etc/boxmaker
sudo cp deploy/config/{inferproxy,brokerd,loopd}.json deploy/config/llama-server.env /etc/boxmaker/
sudo cp deploy/systemd/* /etc/systemd/system/
sudo systemctl daemon-reload
sudo systemctl enable --now boxmaker.target
sudo usermod -aG boxmaker "$USER"        # log in again for the group to apply
\`\`\`
`;
  const r = checkInstall(sectionBlocks(old, "## Old"));

  it("finds the missing /etc/sysusers.d, the && chains and the bash brace expansion", () => {
    const has = (s: string) => r.problems.filter((p) => p.includes(s));
    expect(has("copies into /etc/sysusers.d, which no earlier command creates")).toHaveLength(1);
    // One per command on a line with &&: the clone, cd, npm ci, build, cp and sysusers.
    expect(has("&& or ||")).toHaveLength(6);
    expect(has("brace expansion is bash")).toHaveLength(1);
    expect(has("copies into /etc/systemd/system, which no earlier command creates")).toHaveLength(1);
  });

  it("a syntax error is reported by sh -n, an unknown source as not in the repository", () => {
    const bad = checkInstall(
      sectionBlocks(
        "## X\n\n```sh\ncd /opt/boxmaker\nsudo install -d /etc/x\nsudo cp deploy/nope.conf /etc/x/\nif true; then\n```\n",
        "## X",
      ),
    );
    expect(bad.problems.some((p) => p.includes("sh -n"))).toBe(true);
    expect(bad.problems.some((p) => p.includes("deploy/nope.conf is not in the repository"))).toBe(true);
  });
});
