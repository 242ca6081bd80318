import { reachPrefix } from "../socket-choice.js";
import { sandboxOption } from "../completion/value-kinds.js";
import type { Command } from "commander";
import type { GlobalOptions } from "../global-options.js";
import { withClient } from "../connection.js";
import { ExitCode } from "../exit-codes.js";
import { printOut, printErr } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";

/** The file the demo's "model" fixes. */
const DEMO_FILE = "greeting.py";
const DEMO_BEFORE = 'def greet(name):\n    return "Helo, " + name + "!"\n\n\nprint(greet("world"))\n';
const DEMO_PROMPT = `There is a typo in ${DEMO_FILE}; please fix it.`;

/** What the simulated model says, turn by turn: read, propose an edit (it waits for approval), answer. */
function demoScript(): unknown[] {
  return [
    {
      reasoning: `The person says ${DEMO_FILE} has a typo. I should read it before changing anything.`,
      toolCalls: [{ id: "demo-read", name: "read_file", arguments: JSON.stringify({ path: DEMO_FILE }) }],
    },
    {
      reasoning: 'Line 2 says "Helo" where it should say "Hello". A one-word edit fixes it.',
      content: 'Found it: line 2 says "Helo". I will propose the fix; it needs your approval.',
      toolCalls: [
        {
          id: "demo-edit",
          name: "edit_file",
          arguments: JSON.stringify({ path: DEMO_FILE, old_text: '"Helo, "', new_text: '"Hello, "' }),
        },
      ],
    },
    {
      content: `Fixed: ${DEMO_FILE} now greets with "Hello, world!". Run \`python3 ${DEMO_FILE}\` to check it.`,
    },
  ];
}

export function register(program: Command, _globals: () => GlobalOptions): void {
  program
    .command("demo")
    .description("a first look without a GPU: a simulated model reads a file, proposes a fix you approve, and answers")
    .option("--keep", "keep the demo's directory (workspace, logs, session) afterwards")
    .addOption(sandboxOption("bwrap | none (default: bwrap when it is installed)"))
    .addHelpText(
      "after",
      `
Starts the whole stack (loopd, inferproxy, brokerd) against the llama.cpp
simulator in a temporary directory, with a workspace holding ${DEMO_FILE}.
The simulated model reads the file, proposes an edit that waits for your
approval (you see the diff and answer y/n right there), applies it and
answers. Nothing outside the temporary directory is touched. Without a
terminal the edit is approved automatically.

Examples:
  boxmaker demo
  boxmaker demo --keep`,
    )
    .action(async (opts: { keep?: boolean; sandbox?: string }) => {
      const { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } = await import("node:fs");
      const { homedir, tmpdir } = await import("node:os");
      const { join } = await import("node:path");
      const { planUp, findOnPath } = await import("../supervisor/up-options.js");
      const { Supervisor } = await import("../supervisor/supervisor.js");
      const s = styleFor(process.stderr);
      const say = (t: string) => void printErr(`${s.cyan("demo")} ${t}\n`);

      const dir = mkdtempSync(join(tmpdir(), "bxdemo-"));
      const ws = join(dir, "workspace");
      mkdirSync(ws);
      writeFileSync(join(ws, DEMO_FILE), DEMO_BEFORE);
      const script = join(dir, "demo-script.json");
      writeFileSync(script, JSON.stringify(demoScript(), null, 1));
      const sandbox = opts.sandbox ?? (findOnPath("bwrap", process.env.PATH ?? "") ? "bwrap" : "none");
      const plan = planUp(
        {
          llamaSim: true,
          sandbox,
          workspace: [ws],
          runtimeDir: join(dir, "run"),
          stateDir: join(dir, "state"),
          logLevel: "warn",
        },
        { env: process.env, cwd: ws, home: homedir(), tmp: tmpdir(), uid: process.getuid?.() ?? 0 },
      );
      const sup = new Supervisor({
        ...plan,
        upstream: { kind: "llama-sim", script },
        settings: plan.settings,
        stopGraceMs: 5_000,
        nodePath: process.execPath,
        out: () => undefined,
        err: (l) => printErr(`${s.dim(l)}\n`),
      });
      say(`starting the stack with the llama.cpp simulator in ${dir} (sandbox: ${sandbox}) …`);
      let exit: ExitCode = ExitCode.failed;
      try {
        await sup.start();
        say(`workspace ${ws} holds ${DEMO_FILE}:`);
        printErr(indent(DEMO_BEFORE, s));
        const { SessionRole, ToolDecision } = await import("@boxmaker/common/client");
        exit = await withClient(
          { socket: async () => ({ path: plan.layout.sockets.loopd, source: { kind: "own" } }) },
          async (client) => {
            const session = await client.createSession({ role: SessionRole.MAIN, title: "demo: fix the typo" });
            printOut(`${s.bold(s.green("› "))}${DEMO_PROMPT}\n`);
            const { renderEvents, resumingEvents } = await import("../turn-stream.js");
            const tty = Boolean(process.stdin.isTTY);
            let onEvent: (ev: import("@boxmaker/common/client").SessionEvent) => void;
            if (tty) {
              const { InPlaceApprovals } = await import("../in-place-approval.js");
              // The demo's stack is its own: another terminal reaches it only by its socket.
              const reach = reachPrefix({ path: plan.layout.sockets.loopd, source: { kind: "own" } });
              const approvals = new InPlaceApprovals(client, s, undefined, undefined, undefined, undefined, reach);
              onEvent = (ev) => approvals.handle(ev);
            } else {
              onEvent = (ev) => {
                const e = ev.event;
                if (e.case === "toolDecision" && e.value.decision === ToolDecision.STAGED && e.value.proposalId) {
                  const id = e.value.proposalId;
                  void (async () => {
                    const { proposals } = await client.listProposals({ includeDecided: false });
                    const p = proposals.find((x) => x.id === id);
                    if (p)
                      printErr(
                        (await import("../render/proposal.js")).renderProposal(
                          p,
                          s,
                          (await import("../render/columns.js")).widthOf(process.stderr),
                        ),
                      );
                    say(`no terminal: approving ${id} automatically`);
                    await client.decideProposal({ id, approve: true, reason: "" });
                  })();
                }
              };
            }
            const events = resumingEvents(client.send({ sessionId: session.id, text: DEMO_PROMPT }), (afterSeq) =>
              client.follow({ sessionId: session.id, afterSeq }),
            );
            const outcome = await renderEvents(events, {
              json: false,
              reasoning: true,
              onEvent,
            });
            say(`${DEMO_FILE} now reads:`);
            printErr(indent(readFileSync(join(ws, DEMO_FILE), "utf8"), s));
            say(
              `that was session ${session.id}. With a real model: \`boxmaker up --llama-server BIN --model GGUF\` in your project, then \`boxmaker chat\`.`,
            );
            return outcome;
          },
        );
      } finally {
        await sup.stop(0);
        if (opts.keep) say(`kept ${dir}`);
        else rmSync(dir, { recursive: true, force: true });
      }
      process.exitCode = exit;
    });
}

function indent(text: string, s: import("../render/style.js").Style): string {
  return `${s.dim(text.replace(/\n$/, "").replace(/^/gm, "    "))}\n`;
}
