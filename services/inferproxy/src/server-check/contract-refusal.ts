import { resolve } from "node:path";
import type { SelfTestResult } from "./self-test.js";

/** Where the deployed units read inferproxy's config (deploy/systemd, docs/operations.md). */
const INSTALLED_CONFIG = "/etc/boxmaker/inferproxy.json";

const shellSafe = /^[A-Za-z0-9_./:=@%+-]+$/;
const quoted = (s: string) => (shellSafe.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);

/**
 * What the operator runs to take the server as it is, for the way this daemon
 * was started: the config file it reads is where the accepted values must go,
 * and only a restart makes the daemon read them. Under systemd (a Type=notify
 * unit has NOTIFY_SOCKET; `boxmaker up` clears it) the restart is systemctl's;
 * `boxmaker up` writes its configs afresh on every start, so there the flag is
 * the way. A config in the Nix store is the module's, read-only.
 */
export function acceptCommand(configPath: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const path = configPath ? resolve(configPath) : undefined;
  if (path?.startsWith("/nix/store/")) {
    return "set the services.boxmaker contract options to the server's values (`boxmaker contract show` prints them), then `nixos-rebuild switch`";
  }
  const accept = `boxmaker contract accept${path && path !== INSTALLED_CONFIG ? ` --config ${quoted(path)}` : ""}`;
  if (env.NOTIFY_SOCKET) return `\`${accept} && systemctl restart boxmaker-inferproxy\``;
  if (!path) return "`boxmaker up --accept-server-contract`";
  return `\`${accept}\` and a restart of inferproxy (or \`boxmaker up --accept-server-contract\`)`;
}

/**
 * The one-line account of what differs, by the config's own key names, with
 * hash prefixes: it travels to the person through loopd, which cuts long
 * errors (the full hashes are in Status, `boxmaker contract show` and the log).
 */
export function differences(st: SelfTestResult): string {
  const short = (h: string) => (h ? `${h.slice(0, 12)}…` : "none");
  const diffs: string[] = [];
  if (st.actualTemplateSha256 !== st.expectedTemplateSha256) {
    diffs.push(
      `template_sha256: expected ${short(st.expectedTemplateSha256)}, server has ${short(st.actualTemplateSha256)}`,
    );
  }
  if (st.actualNCtx !== st.expectedNCtx)
    diffs.push(`n_ctx_per_slot: expected ${st.expectedNCtx}, server has ${st.actualNCtx}`);
  if (st.actualTotalSlots !== st.expectedTotalSlots)
    diffs.push(`total_slots: expected ${st.expectedTotalSlots}, server has ${st.actualTotalSlots}`);
  return (diffs.length ? diffs : st.mismatches).join("; ");
}

/** Why a completion is refused (FAILED_PRECONDITION): what differs, how to take the server as it is, what it serves. */
export function refusalMessage(
  upstream: string,
  st: SelfTestResult,
  model: string | undefined,
  accept: string,
): string {
  return (
    `llama-server at ${upstream} does not match the contract (${differences(st)}). ` +
    `To use it as it is: ${accept}; or restart it with the model and flags the contract was recorded for` +
    `${model ? `. It serves ${model}` : ""}`
  );
}
