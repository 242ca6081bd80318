import type { Command } from "commander";
import { withClient } from "../connection.js";
import { UsageError } from "../errors.js";
import type { GlobalOptions } from "../global-options.js";
import { output, proto } from "../output.js";
import { printErr, printOut } from "../render/terminal-safe.js";
import { styleFor } from "../render/style.js";

export function register(program: Command, globals: () => GlobalOptions): void {
  const hooks = program
    .command("hooks")
    .description("commands brokerd runs at a session's events: the operator's, and each workspace's trusted file")
    .addHelpText(
      "after",
      `
Hooks come from brokerd's config ("hooks") and from a workspace's own
.boxmaker/hooks.json, which runs only after a person trusts its exact
content; a changed file is untrusted again. See docs/operations.md, "Hooks".

Examples:
  boxmaker hooks
  boxmaker hooks trust
  boxmaker hooks trust ~/src/app/.boxmaker/hooks.json --yes`,
    );

  hooks
    .command("ls", { isDefault: true })
    .description("list the hooks with their origin, and each project hook file with whether it is trusted")
    .option("--json", "print the ListHooks response as JSON")
    .action(async (opts: { json?: boolean }) => {
      const res = await withClient(globals(), (client) => client.listHooks({}));
      await output(opts, {
        json: async () => proto((await import("@boxmaker/common/client")).ListHooksResponseSchema, res),
        text: async () => {
          const { renderHooks } = await import("../render/hooks.js");
          return renderHooks(res, styleFor(process.stdout));
        },
      });
    });

  hooks
    .command("trust")
    .description("show a project hook file and trust exactly that content, so its hooks run")
    .argument("[file]", "the project hook file (default: every one not trusted yet)")
    .option("-y, --yes", "trust without asking (the content is still printed)")
    .option(
      "--json",
      'print {"trusted": [{"file", "sha256"}], "declined": [file]} as one JSON object (the content goes to stderr)',
    )
    .action((file: string | undefined, opts: { yes?: boolean; json?: boolean }) =>
      withClient(globals(), async (client) => {
        const { projectFiles } = await client.listHooks({});
        const wanted = file
          ? projectFiles.filter((f) => f.file === file)
          : projectFiles.filter((f) => f.state === "untrusted");
        if (file && !wanted.length) throw new UsageError(`${file} is not a project hook file of brokerd's workspaces`);
        const trusted: { file: string; sha256: string }[] = [];
        const declined: string[] = [];
        const done = () => output(opts, { json: () => ({ value: { trusted, declined } }), text: () => undefined });
        if (!wanted.length) {
          printErr("no project hook file waits to be trusted\n");
          return done();
        }
        const { renderTrustQuestion } = await import("../render/hooks.js");
        // With --json stdout is the JSON alone: what is trusted is still shown, on stderr.
        const show = opts.json ? printErr : printOut;
        const style = styleFor(opts.json ? process.stderr : process.stdout);
        for (const f of wanted) {
          if (f.state === "invalid") throw new UsageError(`${f.file} is not a valid hook file: ${f.error}`);
          show(renderTrustQuestion(f, style));
          if (!opts.yes) {
            const { confirm } = await import("../confirm.js");
            if (!(await confirm(`Run the hooks in ${f.file} from now on?`))) {
              printErr("not trusted\n");
              declined.push(f.file);
              continue;
            }
          }
          // The hash shown, not the file as it is by now: an edit in between is refused by brokerd.
          const res = await client.trustHooks({ file: f.file, sha256: f.sha256 });
          trusted.push({ file: res.file?.file ?? f.file, sha256: f.sha256 });
          show(`trusted ${res.file?.file} (sha256 ${f.sha256.slice(0, 12)}…)\n`);
        }
        return done();
      }),
    );
}
