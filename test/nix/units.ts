// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${…} in this file is Nix and systemd syntax, quoted on purpose.
// Turns the NixOS module's evaluated systemd.services/targets (test/nix/eval-module.nix)
// into unit-file form, the way NixOS renders them, and normalises both those and
// the plain units in deploy/systemd so they can be compared directive by
// directive. Every difference between the two that is NixOS-specific by nature
// is removed here, in NIXOS_SPECIFIC, and nowhere else.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { DAEMON_NODE_FLAGS } from "@boxmaker/common";
import { repoRoot } from "../support/stack.js";
import { readUnit, type Unit } from "../deploy/unit-file.js";

export type NixValue = string | number | boolean | null | NixValue[] | { storePath: string; text: string };

export interface EvaluatedUnit {
  description: string;
  documentation: string[];
  wantedBy: string[];
  requiredBy: string[];
  wants: string[];
  requires: string[];
  after: string[];
  before: string[];
  partOf: string[];
  bindsTo: string[];
  unitConfig: Record<string, NixValue>;
  startLimitIntervalSec: number | null;
  startLimitBurst: number | null;
  // services only
  environment?: Record<string, string | null>;
  path?: string[];
  serviceConfig?: Record<string, NixValue>;
}

export interface Evaluation {
  services: Record<string, EvaluatedUnit>;
  targets: Record<string, EvaluatedUnit>;
  users: {
    users: Record<string, { isSystemUser: boolean; group: string; home: string }>;
    groups: Record<string, unknown>;
  };
  environment: { systemPackages: string[]; variables: Record<string, string> };
  warnings: string[];
  package: string;
  /** Each daemon's config file: its store path, JSON, the build script that checks it, and the unchecked file it checks. */
  configFiles: Record<string, { storePath: string; text: string; build: string; unchecked: string }>;
}

/** The error text of an evaluation that must fail (the test fails if it succeeds). */
export function evalError(boxmaker: unknown): string {
  try {
    evalModule(boxmaker);
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error("evaluation succeeded");
}

/** Evaluates nix/module.nix with `services.boxmaker = boxmaker`; throws nix's error text on failure. */
export function evalModule(boxmaker: unknown): Evaluation {
  const r = spawnSync(
    "nix-instantiate",
    [
      "--eval",
      "--strict",
      "--json",
      join("test", "nix", "eval-module.nix"),
      "--argstr",
      "boxmakerJSON",
      JSON.stringify(boxmaker),
    ],
    { encoding: "utf8", cwd: repoRoot, timeout: 60_000 },
  );
  if (r.status !== 0) throw new Error(r.stderr || r.error?.message || `nix-instantiate exited ${r.status}`);
  return JSON.parse(r.stdout) as Evaluation;
}

const add = (sec: Map<string, string[]>, key: string, v: NixValue | undefined): void => {
  if (v === undefined || v === null) return;
  if (Array.isArray(v)) {
    // NixOS writes one line per element.
    for (const e of v) add(sec, key, e);
    return;
  }
  const s = typeof v === "object" ? v.storePath : v === true ? "true" : v === false ? "false" : String(v);
  sec.set(key, [...(sec.get(key) ?? []), s]);
};

/** What NixOS's systemd module writes for a service or target (nixos/lib/systemd-lib.nix), as a Unit. */
export function renderUnit(u: EvaluatedUnit): Unit {
  const unit = new Map<string, Map<string, string[]>>();
  const sec = new Map<string, string[]>();
  if (u.description) add(sec, "Description", u.description);
  if (u.documentation.length) add(sec, "Documentation", u.documentation.join(" "));
  for (const [key, list] of [
    ["Wants", u.wants],
    ["Requires", u.requires],
    ["After", u.after],
    ["Before", u.before],
    ["PartOf", u.partOf],
    ["BindsTo", u.bindsTo],
  ] as const) {
    if (list.length) add(sec, key, list.join(" "));
  }
  add(sec, "StartLimitIntervalSec", u.startLimitIntervalSec);
  add(sec, "StartLimitBurst", u.startLimitBurst);
  for (const [k, v] of Object.entries(u.unitConfig)) add(sec, k, v);
  unit.set("Unit", sec);
  if (u.serviceConfig) {
    const svc = new Map<string, string[]>();
    const env = { ...u.environment };
    // NixOS puts `path` (plus its own defaults) on PATH.
    if (u.path?.length) env.PATH = u.path.map((p) => `${p}/bin`).join(":");
    for (const [k, v] of Object.entries(env)) if (v !== null) add(svc, "Environment", `${k}=${v}`);
    for (const [k, v] of Object.entries(u.serviceConfig)) add(svc, k, v);
    unit.set("Service", svc);
  }
  // NixOS links wantedBy into <target>.wants/ instead of an [Install] section; same effect once enabled.
  if (u.wantedBy.length) unit.set("Install", new Map([["WantedBy", [u.wantedBy.join(" ")]]]));
  return unit;
}

// ---------------------------------------------------------------------------
// Normalisation. Both sides are reduced to section -> key -> one string.

/** Keys systemd accumulates over repeated lines (NixOS writes lists that way; the plain units use one line). */
const LIST_KEYS = new Set([
  "RestrictAddressFamilies",
  "SupplementaryGroups",
  "ReadWritePaths",
  "Environment",
  "Wants",
  "After",
  "WantedBy",
  "Documentation",
]);

const seconds = (v: string): string => {
  const m = /^(\d+)\s*(min|s|sec|h)?$/.exec(v.trim());
  if (!m) return v;
  const n = Number(m[1]);
  return String(m[2] === "min" ? n * 60 : m[2] === "h" ? n * 3600 : n);
};
const bool = (v: string): string => (/^(yes|true|on)$/.test(v) ? "yes" : /^(no|false|off)$/.test(v) ? "no" : v);
/** A shell script's words with line breaks and `;` as plain separators. */
const scriptWords = (s: string): string => s.replace(/[;\n]/g, " ").replace(/\s+/g, " ").trim();

export type Normalised = Map<string, Map<string, string>>;

function flatten(unit: Unit): Normalised {
  const out: Normalised = new Map();
  for (const [name, sec] of unit) {
    const m = new Map<string, string>();
    for (const [key, values] of sec) {
      let v = LIST_KEYS.has(key) ? values.join(" ").split(/\s+/).filter(Boolean).join(" ") : values.at(-1)!;
      if (key.endsWith("Sec")) v = seconds(v);
      v = bool(v);
      m.set(key, v);
    }
    out.set(name, m);
  }
  return out;
}

const STORE = /\/nix\/store\/[0-9a-z]{32}-/.source;

/**
 * Everything that legitimately differs between a NixOS unit and the plain one,
 * and how it is made comparable. Nothing else is normalised away.
 */
export const NIXOS_SPECIFIC = [
  "booleans (true/false vs yes/no) and time spans (300 vs 5min) are compared by value",
  "list options (one line per value in NixOS) are compared as space-joined lists",
  "NixOS has no [Install] section (wantedBy becomes .wants symlinks); wantedBy is compared with WantedBy=",
  "the package's store path replaces /opt/boxmaker: ${package}/lib/boxmaker -> /opt/boxmaker, ${package}/bin/boxmaker-<d> (a wrapper adding the stack's node flags) -> node <flags> /opt/boxmaker/services/<d>/dist/main.js",
  "generated config files in the store replace /etc/boxmaker/<d>.json",
  "other store binaries (rm from coreutils) replace the bare command the plain units find on PATH",
  "llama-server: ${llama-cpp}/bin/llama-server replaces /usr/local/bin/llama-server; the module passes llamaServer.model and extraFlags in ExecStart where the plain unit reads ${LLAMA_MODEL} and $LLAMA_EXTRA_ARGS from EnvironmentFile=",
  "llama-server's readiness wait is a writeShellScript in NixOS and `sh -c '…'` in the plain unit ($$ escapes $): compared as the script's words",
  "Environment=PATH from `path` (NixOS's way of putting curl on PATH) is dropped",
  "llama-server's devices follow llamaServer.package's GPU backend in NixOS (DeviceAllow= for its device classes, PrivateDevices= for a CPU build), which the plain unit cannot know: both are dropped",
] as const;

export function normaliseNixos(unit: Unit, ev: Evaluation, model: string | null, extraFlags: string[]): Normalised {
  const out = flatten(unit);
  const pkg = ev.package.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const svc = out.get("Service");
  const fix = (v: string) =>
    v
      .replace(
        new RegExp(`${pkg}/bin/boxmaker-(\\w+)`, "g"),
        `node ${DAEMON_NODE_FLAGS.join(" ")} /opt/boxmaker/services/$1/dist/main.js`,
      )
      .replace(new RegExp(`${pkg}/lib/boxmaker`, "g"), "/opt/boxmaker")
      .replace(new RegExp(`${STORE}boxmaker-(\\w+)\\.json`, "g"), "/etc/boxmaker/$1.json")
      .replace(new RegExp(`${STORE}llama-cpp[^/]*/bin/llama-server`, "g"), "/usr/local/bin/llama-server")
      .replace(new RegExp(`${STORE}[^/\\s]+/bin/`, "g"), "");
  for (const sec of out.values()) for (const [k, v] of sec) sec.set(k, fix(v));
  if (svc) {
    const env = svc.get("Environment");
    if (env !== undefined) {
      const kept = env.split(" ").filter((e) => !e.startsWith("PATH="));
      if (kept.length) svc.set("Environment", kept.join(" "));
      else svc.delete("Environment");
    }
    if (svc.get("ExecStart")?.includes("/bin/llama-server")) {
      svc.delete("DeviceAllow");
      svc.delete("PrivateDevices");
    }
    const exec = svc.get("ExecStart");
    if (exec?.startsWith("/usr/local/bin/llama-server")) {
      const words = exec.split(/\s+/).map((w) => w.replace(/^'(.*)'$/, "$1"));
      const i = words.indexOf("--model");
      if (i >= 0 && words[i + 1] === model) words[i + 1] = "${LLAMA_MODEL}";
      if (extraFlags.length && words.slice(-extraFlags.length).join(" ") === extraFlags.join(" "))
        words.splice(-extraFlags.length);
      svc.set("ExecStart", [...words, "$LLAMA_EXTRA_ARGS"].join(" "));
    }
    const post = unit.get("Service")?.get("ExecStartPost")?.at(-1);
    const script = Object.values(ev.services).find((s) => typeof s.serviceConfig?.ExecStartPost === "object")
      ?.serviceConfig?.ExecStartPost;
    if (post && script && typeof script === "object" && !Array.isArray(script) && script.storePath === post) {
      svc.set("ExecStartPost", scriptWords(script.text));
    }
  }
  return out;
}

export function normalisePlain(name: string): Normalised {
  const out = flatten(readUnit(name));
  const svc = out.get("Service");
  if (svc) {
    for (const [k, v] of svc) svc.set(k, v.replace(/\s+/g, " "));
    svc.delete("EnvironmentFile");
    const post = svc.get("ExecStartPost");
    const m = post ? /^sh -c '(.*)'$/.exec(post) : null;
    if (m) svc.set("ExecStartPost", scriptWords(m[1]!.replace(/\$\$/g, "$")));
  }
  return out;
}

/** Every directive on which the two differ, as "unit [Section] Key: plain=… nixos=…". */
export function differences(name: string, plain: Normalised, nixos: Normalised): string[] {
  const diffs: string[] = [];
  for (const section of new Set([...plain.keys(), ...nixos.keys()])) {
    const a = plain.get(section) ?? new Map<string, string>();
    const b = nixos.get(section) ?? new Map<string, string>();
    for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
      if (a.get(key) !== b.get(key))
        diffs.push(
          `${name} [${section}] ${key}: deploy/systemd=${a.get(key) ?? "(unset)"} module=${b.get(key) ?? "(unset)"}`,
        );
    }
  }
  return diffs;
}
