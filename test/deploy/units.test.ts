import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { requires } from "../support/requirements.js";
import { DAEMON_NODE_FLAGS } from "@boxmaker/common";
import { repoRoot } from "../support/stack.js";
import { readFileSync } from "node:fs";
import { environment, execStart, readUnit, value, type Unit } from "./unit-file.js";
import { cycle, transaction, unitGraph, waitsForAll } from "./unit-graph.js";

// CI installs both (Debian: systemd, nix-bin); a developer machine may lack nix.
const canCheck = requires("deploy/check.sh", ["systemd-analyze", "nix-instantiate"]);

describe.skipIf(!canCheck)("deploy/check.sh", () => {
  it("verifies every unit and parses every .nix file", () => {
    const r = spawnSync(join(repoRoot, "deploy", "check.sh"), { encoding: "utf8", timeout: 60_000 });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    for (const f of ["boxmaker-llama-server.service", "boxmaker-loopd.service", "nix/module.nix", "flake.nix"]) {
      expect(r.stdout).toContain(`ok   ${f}`);
    }
  }, 70_000);
});

const daemons = ["inferproxy", "brokerd", "loopd"] as const;
const allServices = ["llama-server", ...daemons].map((n) => `boxmaker-${n}.service`);

describe("the units", () => {
  it.each(allServices)("%s shares /run/boxmaker safely and is hardened", (name) => {
    const u = readUnit(name);
    expect(value(u, "Service", "RuntimeDirectory")).toBe("boxmaker");
    expect(value(u, "Service", "RuntimeDirectoryMode")).toBe("0750");
    expect(value(u, "Service", "RuntimeDirectoryPreserve")).toBe("yes");
    expect(value(u, "Service", "UMask")).toBe("0007");
    expect(value(u, "Service", "User")).toBe("boxmaker");
    expect(value(u, "Service", "Group")).toBe("boxmaker");
    expect(value(u, "Service", "ProtectSystem")).toBe("strict");
    expect(value(u, "Service", "PrivateTmp")).toBe("yes");
    expect(value(u, "Service", "NoNewPrivileges")).toBe("yes");
    expect(value(u, "Service", "Restart")).toBe("on-failure");
    expect(value(u, "Unit", "StartLimitBurst")).toMatch(/^\d+$/);
    expect(value(u, "Unit", "PartOf")).toBe("boxmaker.target");
    expect(value(u, "Install", "WantedBy")).toBe("boxmaker.target");
  });

  it.each(daemons)(
    "boxmaker-%s is Type=notify, accepts notifications from children, and does not restart on a bad config",
    (d) => {
      const u = readUnit(`boxmaker-${d}.service`);
      expect(value(u, "Service", "Type")).toBe("notify");
      expect(value(u, "Service", "NotifyAccess")).toBe("all");
      expect(value(u, "Service", "RestartPreventExitStatus")).toBe("2 203 216 217");
      expect(execStart(u).slice(1)).toEqual([
        ...DAEMON_NODE_FLAGS,
        `/opt/boxmaker/services/${d}/dist/main.js`,
        "--config",
        `/etc/boxmaker/${d}.json`,
      ]);
      expect(environment(u).NODE_ENV).toBe("production");
    },
  );

  it("loopd has no network, only Unix sockets", () => {
    const u = readUnit("boxmaker-loopd.service");
    expect(value(u, "Service", "PrivateNetwork")).toBe("yes");
    expect(value(u, "Service", "RestrictAddressFamilies")).toBe("AF_UNIX");
  });

  it("orders loopd after inferproxy and brokerd, and inferproxy after llama-server", () => {
    expect(value(readUnit("boxmaker-loopd.service"), "Unit", "After")?.split(" ").sort()).toEqual([
      "boxmaker-brokerd.service",
      "boxmaker-inferproxy.service",
      "boxmaker.target",
    ]);
    expect(value(readUnit("boxmaker-inferproxy.service"), "Unit", "After")).toBe(
      "boxmaker-llama-server.service boxmaker.target",
    );
    expect(value(readUnit("boxmaker.target"), "Unit", "Wants")?.split(" ").sort()).toEqual([...allServices].sort());
  });

  it("llama-server: clears its stale socket, keeps state in StateDirectory, waits for /health", () => {
    const u = readUnit("boxmaker-llama-server.service");
    expect(value(u, "Service", "Type")).toBe("exec");
    expect(value(u, "Service", "ExecStartPre")).toBe("-rm -f /run/boxmaker/llama.sock");
    expect(value(u, "Service", "ExecStartPost")).toContain(
      "curl -sf -o /dev/null --unix-socket /run/boxmaker/llama.sock http://llama/health",
    );
    expect(value(u, "Service", "StateDirectory")).toBe("boxmaker/slots");
    const args = execStart(u);
    expect(args[args.indexOf("--slot-save-path") + 1]).toBe("/var/lib/boxmaker/slots");
    expect(args[args.indexOf("--host") + 1]).toBe("/run/boxmaker/llama.sock");
    expect(args).not.toContain("--port");
    expect(args).not.toContain("--sleep-idle-seconds");
  });
});

describe("the unit graph: what waits for what", () => {
  const target = "boxmaker.target";
  const g = unitGraph();

  it("every service is PartOf the target and ordered after it", () => {
    for (const name of allServices) {
      const u = readUnit(name);
      expect(value(u, "Unit", "PartOf"), name).toBe(target);
      expect(value(u, "Unit", "After")?.split(" "), name).toContain(target);
    }
  });

  it("`systemctl stop boxmaker.target` stops every service, and its job waits until each has stopped", () => {
    const t = transaction(g, "stop", target);
    expect([...t.jobs].sort()).toEqual([...allServices, target].sort());
    expect(cycle(t)).toBeUndefined();
    expect([...waitsForAll(t, target)].sort()).toEqual([...allServices].sort());
    // And in the stack's order: loopd first, llama-server only after inferproxy.
    expect([...waitsForAll(t, "boxmaker-inferproxy.service")]).toEqual(["boxmaker-loopd.service"]);
    expect([...waitsForAll(t, "boxmaker-llama-server.service")].sort()).toEqual([
      "boxmaker-inferproxy.service",
      "boxmaker-loopd.service",
    ]);
  });

  it("the model tells the broken graph from the fixed one: without After=boxmaker.target the target's stop waits for nothing", () => {
    const dropTargetOrdering = (_name: string, u: Unit): Unit => {
      const after = u.get("Unit")?.get("After");
      if (after) u.get("Unit")!.set("After", after.map((v) => v.replace(/\s*boxmaker\.target/, "")).filter(Boolean));
      return u;
    };
    const t = transaction(unitGraph(dropTargetOrdering), "stop", target);
    expect(t.jobs.size).toBe(allServices.length + 1);
    expect([...waitsForAll(t, target)]).toEqual([]);
  });

  it("`systemctl start boxmaker.target` starts every service without an ordering cycle; starting loopd waits for the whole stack", () => {
    const t = transaction(g, "start", target);
    expect([...t.jobs].sort()).toEqual([...allServices, target].sort());
    expect(cycle(t)).toBeUndefined();
    // One ordering cannot make both of the target's jobs wait (boxmaker.target explains); loopd's start does.
    expect([...waitsForAll(t, target)]).toEqual([]);
    const loopd = transaction(g, "start", "boxmaker-loopd.service");
    expect([...waitsForAll(loopd, "boxmaker-loopd.service")].sort()).toEqual(
      allServices.filter((n) => n !== "boxmaker-loopd.service").sort(),
    );
  });
});

describe("users and groups", () => {
  const sysusers = readFileSync(join(repoRoot, "deploy", "sysusers.d", "boxmaker.conf"), "utf8")
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((w) => w[0] && !w[0].startsWith("#"));
  const groups = new Set(sysusers.filter((w) => w[0] === "g").map((w) => w[1]));
  const users = new Set(sysusers.filter((w) => w[0] === "u").map((w) => w[1]));

  it.each(allServices)(
    "every user and group %s names is created by deploy/sysusers.d (else 216/GROUP, 217/USER)",
    (name) => {
      const u = readUnit(name);
      expect(users).toContain(value(u, "Service", "User"));
      for (const g of [
        value(u, "Service", "Group"),
        ...(value(u, "Service", "SupplementaryGroups")?.split(/\s+/) ?? []),
      ]) {
        if (g) expect(groups, `${name}: group ${g}`).toContain(g);
      }
    },
  );

  it.each(allServices)("%s fails once, not until the start limit, when systemd's own set-up fails", (name) => {
    const codes = value(readUnit(name), "Service", "RestartPreventExitStatus")?.split(/\s+/) ?? [];
    expect(codes).toEqual(expect.arrayContaining(["203", "216", "217"]));
  });
});
