import type { Command } from "commander";
import { RESTART, contractFacts, tryRead, type ContractFacts } from "../contract-facts.js";
import {
  CONTRACT_KEYS,
  INSTALLED_INFERPROXY_CONFIG,
  checkContractValues,
  contractChanges,
  contractForModel,
  readContractFile,
  writeContract,
  type ContractChange,
  type ContractFile,
  type ContractValues,
} from "../contract-file.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { output } from "../output.js";
import { printErr } from "../render/terminal-safe.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  const contract = program
    .command("contract")
    .description("the inference contract: what llama-server reports, what inferproxy expects, and adopting a new one");

  contract
    .command("show")
    .description("the server's template sha256, n_ctx_per_slot and total_slots beside inferproxy's contract")
    .option("--config <path>", "also compare inferproxy's config file", INSTALLED_INFERPROXY_CONFIG)
    .option("--json", "print one JSON object")
    .option("--check", "exit 1 when the server and the contract differ")
    .addHelpText(
      "after",
      `
The server's values are as inferproxy sees them (GET /props, checked on every
new connection). Exit 0 when both sides could be read, whatever the verdict
(a new model differing is what show is run to see, before accept); with
--check, 1 when they differ (completions are refused until the contract is
accepted or the server restarted as recorded). 6 when nothing could be
checked (inferproxy or llama-server not up).

Examples:
  boxmaker contract show
  boxmaker contract show --check || sudo boxmaker contract accept
  boxmaker contract show --json | jq .server`,
    )
    .action(async (opts: { config: string; json?: boolean; check?: boolean }) => {
      const read = tryRead(opts.config);
      const f = await contractFacts(globals(), read);
      const fileContract = read.file?.contract;
      await output(opts, {
        json: () => ({
          value: {
            verdict: f.verdict,
            reason: f.why,
            source: f.source,
            server: f.server ? { state: f.serverState, upstream: f.upstream, model: f.model, ...f.server } : null,
            contract: f.contract ?? null,
            model_key: f.modelKey,
            contract_entry: f.entry,
            probe_verdict: f.probeVerdict,
            differs: f.differs,
            accept_command: f.verdict === "differs" ? f.acceptCommand : "",
            config_file: read.file
              ? { path: read.file.path, contract: fileContract }
              : { path: opts.config, error: read.error },
          },
        }),
        text: () => renderShow(f, opts.config, read),
      });
      process.exitCode =
        f.verdict === "matches"
          ? ExitCode.ok
          : f.verdict === "differs"
            ? opts.check
              ? ExitCode.failed
              : ExitCode.ok
            : ExitCode.unavailable;
    });

  contract
    .command("accept")
    .description("write the server's current contract into inferproxy's config file (then restart inferproxy)")
    .option("--config <path>", "inferproxy's config file", INSTALLED_INFERPROXY_CONFIG)
    .option("--json", "print what changed as one JSON object")
    .option("--force", "accept a template the probe refuses for tool use (no_tools) or could not probe")
    .addHelpText(
      "after",
      `
Takes template_sha256, n_ctx_per_slot and total_slots as inferproxy sees the
server now, with the template probe's verdict, and writes them as the served
model's entry in the file's contract table ("contracts", keyed by the server's
--alias, else the model file's name): each model the operator runs keeps its
own entry, so swapping back to one accepted before needs nothing. Every other
key is kept; the file is replaced atomically, keeping its mode and owner.
A template the probe finds renders no tools is refused (the model would see
no tools at all) unless --force; so is one the probe could not check while
the stack is up. Before the stack is up there is no probe: the entry is
written without a verdict and \`boxmaker doctor\` has it once inferproxy runs. inferproxy reads
its config at start: \`${RESTART}\` applies it. Under
\`boxmaker up\`, use \`boxmaker up --accept-server-contract\` instead.

Exit 0 when written (or nothing to change), 2 when there is no such file,
6 when the server could not be checked, 1 when the file cannot be replaced.

Examples:
  sudo boxmaker contract accept && sudo ${RESTART}
  boxmaker contract accept --config ./inferproxy.json --json`,
    )
    .action(async (opts: { config: string; json?: boolean; force?: boolean }) => {
      const f = await contractFacts(globals(), tryRead(opts.config));
      if (!f.server) {
        printErr(`boxmaker: nothing to accept: ${f.why}\n`);
        process.exitCode = ExitCode.unavailable;
        return;
      }
      const bad = checkContractValues(f.server);
      if (bad) {
        printErr(`boxmaker: nothing to accept: ${bad}\n`);
        process.exitCode = ExitCode.failed;
        return;
      }
      const refusal = probeRefusal(f);
      if (refusal && !opts.force) {
        printErr(`boxmaker: not accepted: ${refusal}; --force accepts it all the same\n`);
        process.exitCode = ExitCode.failed;
        return;
      }
      if (!f.modelKey) {
        printErr("boxmaker: nothing to accept: llama-server reports no model path or alias to key the entry by\n");
        process.exitCode = ExitCode.failed;
        return;
      }
      const file = readContractFile(opts.config);
      const held = contractForModel(file, f.modelKey);
      const verdict = f.probeVerdict === "ok" || f.probeVerdict === "warn" ? f.probeVerdict : "";
      const had = file.entries.find((e) => e.model === f.modelKey);
      const changes = held.entry
        ? contractChanges(held.contract, f.server)
        : contractChanges({ template_sha256: "", n_ctx_per_slot: 0, total_slots: 0 }, f.server);
      const verdictChanged = (had?.probe_verdict ?? "") !== verdict;
      if (changes.length || verdictChanged)
        writeContract(file, f.server, { model: f.modelKey, probe_verdict: verdict });
      // inferproxy reads the file only at start: until then it holds the server to what it started with.
      const restart = contractChanges(f.contract!, f.server).length > 0;
      const { server, modelKey } = f;
      await output(opts, {
        json: () => ({
          value: {
            config: file.path,
            model: f.modelKey,
            added: !had,
            probe_verdict: verdict,
            written: changes.length > 0 || verdictChanged,
            changed: Object.fromEntries(changes.map((c) => [c.key, { from: c.from, to: c.to }])),
            contract: f.server,
            restart: restart ? RESTART : "",
          },
        }),
        text: () => renderAccept(file.path, modelKey, server, had ? changes : [], !had, verdict, restart),
      });
    });
}

const ROWS: Record<(typeof CONTRACT_KEYS)[number], string> = {
  template_sha256: "template_sha256",
  n_ctx_per_slot: "n_ctx_per_slot ",
  total_slots: "total_slots    ",
};

function renderShow(f: ContractFacts, configPath: string, read: { file?: ContractFile; error?: string }): string {
  const out: string[] = [];
  out.push(
    f.server
      ? `llama-server at ${f.upstream || "?"}${f.model ? `, serving ${f.model}` : ""}` +
          (f.source === "llama-server" ? ` (asked directly: ${f.askedDirectlyBecause})` : "")
      : `llama-server: ${f.why}`,
  );
  if (f.modelKey) {
    out.push(
      f.entry
        ? `  held to contracts["${f.entry}"] (the entry for the model it serves)`
        : `  held to contract: the table has no entry for "${f.modelKey}" (\`boxmaker contract accept\` adds one)`,
    );
  }
  for (const k of CONTRACT_KEYS) {
    const mark = f.server ? (f.differs.includes(k) ? "  ✗ differs" : "  ✓") : "";
    out.push(`  ${ROWS[k]}  server    ${f.server ? String(f.server[k]) : "?"}`);
    out.push(`  ${" ".repeat(15)}  contract  ${f.contract ? String(f.contract[k]) : "?"}${mark}`);
  }
  if (read.file && f.source === "llama-server") {
    out.push(`config ${read.file.path}: the contract above (inferproxy reads it at start)`);
  } else if (read.file) {
    const pending = f.contract ? contractChanges(f.contract, contractForModel(read.file, f.modelKey).contract) : [];
    out.push(
      pending.length
        ? `config ${read.file.path} has ${pending.map((c) => `${c.key} ${c.to}`).join(", ")}: inferproxy reads it at start (\`${RESTART}\`)`
        : `config ${read.file.path}: the contract inferproxy holds the server to`,
    );
  } else {
    out.push(`config ${configPath}: not read (${read.error})`);
  }
  if (f.verdict === "matches") out.push("verdict: matches; completions are served");
  else if (f.verdict === "differs") {
    out.push(
      `verdict: differs (${f.differs.join(", ")}); completions are refused`,
      `  to use this server as it is: ${f.acceptCommand || `\`boxmaker contract accept && ${RESTART}\``}`,
      "  or restart llama-server with the model and flags the contract was recorded for",
    );
  } else out.push("verdict: unknown");
  return `${out.join("\n")}\n`;
}

/** Why the probe's verdict stops an accept, if it does. */
function probeRefusal(f: ContractFacts): string | undefined {
  if (f.source !== "inferproxy") return undefined;
  if (f.probeVerdict === "no_tools") return `the template probe refuses this template for tool use: ${f.probeSummary}`;
  if (!f.probeVerdict) return `the template probe has not checked this template (${f.probeSummary || "not run yet"})`;
  return undefined;
}

function renderAccept(
  path: string,
  model: string,
  server: ContractValues,
  changes: ContractChange[],
  added: boolean,
  verdict: string,
  restart: boolean,
): string {
  const field = (k: string) => `contracts["${model}"].${k}`;
  const probe = verdict
    ? `probe verdict ${verdict}`
    : "no probe verdict yet (the stack is not up: `boxmaker doctor` once it is)";
  const out = added
    ? [
        `wrote ${path}: a contracts entry for ${model}:`,
        ...CONTRACT_KEYS.map((k) => `  ${field(k)}: ${server[k]}`),
        `  ${probe}`,
      ]
    : changes.length
      ? [`wrote ${path}:`, ...changes.map((c) => `  ${field(c.key)}: ${c.from} → ${c.to}`), `  ${probe}`]
      : [`${path} already has ${model}'s contract; ${probe}`];
  out.push(
    restart
      ? `\`${RESTART}\` applies it (inferproxy reads its config at start)`
      : "inferproxy already holds the server to it",
  );
  return `${out.join("\n")}\n`;
}
