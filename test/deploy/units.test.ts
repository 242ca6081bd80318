import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { requires } from "../support/requirements.js";
import { DAEMON_NODE_FLAGS } from "@boxmaker/common";
import { repoRoot } from "../support/stack.js";
import { environment, execStart, readUnit, value } from "./unit-file.js";

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
      expect(value(u, "Service", "RestartPreventExitStatus")).toBe("2");
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
    ]);
    expect(value(readUnit("boxmaker-inferproxy.service"), "Unit", "After")).toBe("boxmaker-llama-server.service");
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
