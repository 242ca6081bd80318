import { Type } from "@boxmaker/common";
import { Refused } from "../errors.js";
import { connectionNotes } from "../net-proxy/audit-line.js";
import { quarantinePlanted } from "../planted-files.js";
import { defineTool } from "./define-tool.js";

export const runCommand = defineTool({
  name: "run_command",
  description: "Run a shell command in a sandbox (workspace writable, no network). May need a person's approval.",
  parameters: Type.Object(
    {
      command: Type.String(),
      cwd: Type.Optional(Type.String({ description: "Default the workspace root" })),
      timeout_ms: Type.Optional(Type.Integer({ minimum: 1 })),
    },
    { additionalProperties: false },
  ),
  risk: "exec",
  plan(args, ctx) {
    if (ctx.sandbox.state === "unavailable") {
      throw new Refused("sandbox:unavailable", `run_command is unavailable: ${ctx.sandbox.detail}`);
    }
    const cwd = ctx.guard.resolve(args.cwd ?? ".", { write: false });
    const limit = ctx.config.sandbox.timeout_ms;
    const timeoutMs = Math.min(args.timeout_ms ?? limit, limit);
    let writable: string[] | undefined;
    return {
      paths: [cwd],
      command: args.command,
      preview: `$ ${args.command}\n(in ${cwd.abs}, time limit ${timeoutMs} ms, sandbox: ${ctx.sandbox.state})`,
      checks: { cwd: cwd.abs, command: args.command },
      scopeWrites(dirs) {
        writable = dirs;
      },
      async execute() {
        const r = await ctx.sandbox.run(
          {
            command: args.command,
            cwd: cwd.abs,
            timeoutMs,
            ...(writable ? { writable } : {}),
            ...(ctx.call ? { scope: ctx.call } : {}),
          },
          ctx.signal,
        );
        const notes: string[] = [];
        // Nothing of the run is alive now (bwrap's pid namespace died with it): what it left is final.
        if (r.before) {
          const planted = ctx.guard.plantedSince(r.before, r.after);
          for (const line of quarantinePlanted(planted, ctx.guard.roots, ctx.config.state_dir, `run-${Date.now()}`))
            notes.push(`[${line}; to create or change such a file, propose it with write_file or edit_file]`);
        }
        notes.push(...connectionNotes(r.connections ?? []));
        if (r.timedOut) notes.push(`[killed: the time limit of ${timeoutMs} ms was reached]`);
        else if (r.signal) notes.push(`[killed by ${r.signal}]`);
        if (r.droppedBytes > 0) notes.push(`[output cap reached: ${r.droppedBytes} further bytes were dropped]`);
        notes.push(`[exit code ${r.exitCode ?? "none"}]`);
        const body = r.output.length ? (r.output.endsWith("\n") ? r.output : `${r.output}\n`) : "";
        // The first host it staged: chat asks the person about it once the turn is over.
        const staged = r.connections?.find((c) => c.decision === "staged")?.proposal;
        return { text: body + notes.join("\n"), isError: r.exitCode !== 0, ...(staged ? { proposalId: staged } : {}) };
      },
    };
  },
});
