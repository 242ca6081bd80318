import { Argument, type Command } from "commander";
import { completesTo } from "../completion/value-kinds.js";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";
import { printErr, terminalText, writeText } from "../render/terminal-safe.js";
import { UsageError } from "../errors.js";
import { styleFor } from "../render/style.js";

interface DecideFlags {
  yes?: boolean;
  json?: boolean;
  reason?: string;
}

const proposalArgument = () =>
  completesTo(new Argument("<proposal-id>", "the id from the tool call's frame (a unique prefix is enough)"), {
    ids: "proposals",
  });

/** approve and reject share everything but the question asked and the verb sent. */
export function register(program: Command, globals: () => GlobalOptions): void {
  program
    .command("approve")
    .description("show a staged write, command or network host, then approve and apply it")
    .addArgument(proposalArgument())
    .option("-y, --yes", "do not ask for confirmation")
    .option("--json", "print the decided proposal as JSON")
    .addHelpText(
      "after",
      `
On a terminal, asks before applying unless --yes, one key without Enter:
y applies, n rejects (with an optional reason for the model), l leaves it
pending. Without a terminal (a script, a pipe) --yes is required. brokerd
re-checks the file or command against the current disk before it applies
anything. \`boxmaker proposals\` lists what waits. Exit 0 when applied, 1
when applying failed, 4 when you rejected it or left it pending.

Examples:
  boxmaker approve p-7f3a
  boxmaker approve --yes --json p-7f3a`,
    )
    .action((id: string, opts: DecideFlags) => decide(globals, id, true, opts));

  program
    .command("reject")
    .description("reject a staged write or command; the waiting turn is told so")
    .addArgument(proposalArgument())
    .option("-r, --reason <text>", "why, passed on to the model")
    .option("-y, --yes", "do not ask for confirmation (required without a terminal)")
    .option("--json", "print the decided proposal as JSON")
    .addHelpText(
      "after",
      `
On a terminal, asks before rejecting unless --yes, one key without Enter:
y or n rejects, l leaves it pending. Without a terminal --yes is required.

Examples:
  boxmaker reject p-7f3a
  boxmaker reject -y p-7f3a
  boxmaker reject p-7f3a --reason "keep the old config; edit config.local instead"`,
    )
    .action((id: string, opts: DecideFlags) => decide(globals, id, false, opts));
}

async function decide(globals: () => GlobalOptions, id: string, approve: boolean, opts: DecideFlags): Promise<void> {
  const verb = approve ? "approve" : "reject";
  // Without a terminal nobody can be asked: a script must say so explicitly.
  if (!opts.yes && !process.stdin.isTTY) {
    throw new UsageError(`${verb} without a terminal needs --yes (-y): there is nobody to ask for confirmation`);
  }
  const { findProposal } = await import("../proposals.js");
  const { renderProposal, stateText } = await import("../render/proposal.js");
  await withClient(globals(), async (client) => {
    const p = await findProposal(client, id);
    // The diff goes to stderr under --json so stdout stays one JSON document.
    if (p.state === "withdrawn") {
      // Its turn was cancelled while it waited: nobody would learn what applying it did. One line, no diff.
      printErr(
        `proposal ${p.id} was withdrawn when the turn that staged it was cancelled; it cannot be ${approve ? "approved" : "rejected"} — ask the model to stage it again\n`,
      );
      process.exitCode = ExitCode.failed;
      return;
    }
    const show = opts.json ? process.stderr : process.stdout;
    const s = styleFor(show);
    writeText(show, renderProposal(p, s, (await import("../render/columns.js")).widthOf(show)));
    if (p.state !== "pending") {
      printErr(`proposal ${p.id} was already decided (${p.state}); nothing to do\n`);
      process.exitCode = ExitCode.failed;
      return;
    }
    let verdict = approve;
    let reason = opts.reason ?? "";
    if (!opts.yes) {
      // One key, and the same letters as the question inside a turn: y approves, n rejects, l leaves it.
      const { readKey } = await import("../key-choice.js");
      // A network proposal applies nothing: approving it lets the session's commands reach the host.
      const what = p.tool === "network" ? "network request" : p.tool;
      const q = approve
        ? p.tool === "network"
          ? "Allow this host for the session? [y]es · [n]o, reject · [l]ater "
          : `Apply this ${what}? [y]es, apply · [n]o, reject · [l]ater `
        : `Reject this ${what}? [y]es or [n], reject · [l]ater `;
      printErr(q);
      const a = await readKey(process.stdin, "ynl");
      const key = a && "key" in a ? a.key : "l";
      printErr(`${{ y: approve ? "yes" : "reject", n: "no, reject", l: "later" }[key]}\n`);
      if (key === "l") {
        printErr(`left pending; \`boxmaker approve ${p.id}\` or \`boxmaker reject ${p.id}\` later\n`);
        process.exitCode = ExitCode.needsApproval;
        return;
      }
      verdict = approve && key === "y";
      if (!verdict && !opts.reason) {
        const { createInterface } = await import("node:readline/promises");
        const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
        // Ctrl-C or Ctrl-D here rejects without a reason: the decision was made with the key.
        reason = await new Promise<string>((resolve) => {
          rl.once("SIGINT", () => resolve(""));
          rl.once("close", () => resolve(""));
          rl.question(terminalText("reason for the model (optional, Enter for none): ")).then(resolve, () =>
            resolve(""),
          );
        }).finally(() => rl.close());
        reason = reason.trim();
      }
    }
    const res = await client.decideProposal({ id: p.id, approve: verdict, reason });
    const decided = res.proposal!;
    await output(opts, {
      json: async () => proto((await import("@boxmaker/common/client")).ProposalSchema, decided),
      text: () => `${stateText(decided.state, s)}${decided.result ? `: ${decided.result}` : ""}\n`,
    });
    // Rejected at `approve`'s own question: not applied, by the person's answer.
    process.exitCode =
      decided.state === (verdict ? "applied" : "rejected")
        ? verdict === approve
          ? ExitCode.ok
          : ExitCode.needsApproval
        : ExitCode.failed;
  });
}
