import type { LoopStatusResponse } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { table } from "./text.js";
import { wrapWords } from "./columns.js";
import { diskRows, retentionRows } from "./disk.js";
import { probeSentence, reuseText } from "./template-probe.js";
import { logRows, type LogsReport } from "./log-rows.js";

/** Whether the stack can serve a turn: every daemon up and the server's self-test passed. */
export function healthy(st: LoopStatusResponse): boolean {
  return st.daemons.every((d) => d.reachable) && st.infer?.serverState === "ok" && (st.infer.selfTest?.passed ?? false);
}

const short = (sha: string) => (sha ? sha.slice(0, 12) : "?");

/**
 * `width`: the terminal's columns (each table fits them, its last column wrapping at spaces); undefined when piped.
 * `logs`: the daemons' log files, which the CLI reads itself (loopd does not know where `up` put them).
 */
export function renderStatus(st: LoopStatusResponse, s: Style, width?: number, logs?: LogsReport): string {
  const out: string[] = [];
  // Tables sit two columns in.
  const fit = { width: width === undefined ? undefined : width - 2 };
  const mark = (ok: boolean) => (ok ? s.green("✓") : s.red("✗"));

  out.push(s.bold("daemons"));
  out.push(
    indent(
      table(
        st.daemons.map((d) => [mark(d.reachable), d.name, d.socket, d.reachable ? s.dim(d.message) : s.red(d.message)]),
        { ...fit, drop: [3] },
      ),
    ),
  );

  const inf = st.infer;
  out.push("", s.bold("llama-server"));
  if (!inf) {
    out.push(s.red("  unknown: inferproxy did not answer"));
  } else {
    const state = inf.serverState === "ok" ? s.green(inf.serverState) : s.red(inf.serverState || "unknown");
    const t = inf.selfTest;
    const selfTest = !t?.ran
      ? s.yellow("not run yet")
      : t.passed
        ? s.green("passed")
        : s.red(`FAILED: ${t.mismatches.join("; ")}`);
    const rows = [
      ["state", state],
      ["build", inf.buildInfo || "?"],
      ["model", inf.model || "?"],
      ["upstream", inf.upstream || "?"],
      [
        "template",
        t
          ? `${short(t.actualTemplateSha256)}${t.expectedTemplateSha256 && t.expectedTemplateSha256 !== t.actualTemplateSha256 ? s.red(` (expected ${short(t.expectedTemplateSha256)})`) : ""}`
          : "?",
      ],
      [
        "context",
        t
          ? `n_ctx_per_slot ${t.actualNCtx}${t.ran && t.actualNCtx !== t.expectedNCtx ? s.red(` (expected ${t.expectedNCtx})`) : ""}, ` +
            `total_slots ${t.actualTotalSlots}${t.ran && t.actualTotalSlots !== t.expectedTotalSlots ? s.red(` (expected ${t.expectedTotalSlots})`) : ""}`
          : "?",
      ],
      ["self-test", selfTest],
      ["template probe", probeSentence(inf.templateProbe, s)],
      ["cache reuse", reuseText(st.cacheHealth)],
    ];
    // What differs is above; how to take the server as it is comes from inferproxy, which knows how it was started.
    if (t?.ran && !t.passed && t.acceptCommand) rows.push(["to accept", t.acceptCommand]);
    out.push(indent(table(rows, fit)));
  }

  out.push("", s.bold("slots"));
  const server = new Map((inf?.slots ?? []).map((x) => [x.id, x]));
  const rows = [["SLOT", "ROLE", "RUNNING", "QUEUED", "CACHE OF", "SERVER"].map((h) => s.dim(h))];
  for (const x of st.slots) {
    const srv = server.get(x.slot);
    rows.push([
      String(x.slot),
      x.role,
      x.runningSession ? `${x.runningSession}${x.runningMode ? ` (${x.runningMode})` : ""}` : s.dim("idle"),
      x.queuedSessions.length ? x.queuedSessions.join(", ") : s.dim("-"),
      x.cachedSession || s.dim("-"),
      srv ? `${srv.isProcessing ? "processing" : "idle"}${srv.waiting ? `, ${srv.waiting} waiting` : ""}` : s.dim("?"),
    ]);
  }
  out.push(indent(table(rows, fit)));
  // The map names a slot the server lacks: that role's turns fail at once, and a schedule says so only when it fires.
  if (st.slotMapProblem) out.push(s.red(`  ${st.slotMapProblem}`));

  const b = st.broker;
  out.push("", s.bold("tools"));
  if (!b) out.push(s.red("  unknown: brokerd did not answer"));
  else {
    out.push(
      indent(
        table(
          [
            ["tools", `${b.coreTools} core, ${b.extendedTools} behind find_tool (sha ${short(b.toolsSha256)})`],
            ["proposals", b.pendingProposals ? s.yellow(`${b.pendingProposals} pending approval`) : "none pending"],
            ["sandbox", b.sandbox || "?"],
            ["mcp", b.mcpServers.length ? b.mcpServers.join(", ") : s.dim("none")],
          ],
          fit,
        ),
      ),
    );
  }
  out.push("", s.bold("disk"));
  out.push(
    indent(
      table(
        [
          ...diskRows(st.disk, s),
          ...retentionRows([...(st.disk?.retention ?? []), ...(st.broker?.retention ?? [])], s),
        ],
        fit,
      ),
    ),
  );
  if (logs) out.push("", s.bold("logs"), indent(table(logRows(logs, s), fit)));
  out.push("", `${s.bold("sessions")}  ${st.sessions}`);
  out.push(
    ...wrapWords(
      st.instructionsFile || s.dim("none (no instructions file at the workspace root)"),
      width,
      `${s.bold("instructions")}  `,
      "  ",
    ),
  );
  out.push(...wrapWords(baselineText(st.baselinePrompt, s), width, `${s.bold("baseline prompt")}  `, "  "));
  return `${out.join("\n")}\n`;
}

/** What a new session sends before its first message, against its budget (loopd's BaselinePrompt). */
export function baselineText(
  b: { tokens: number; budgetTokens: number; tools: number; instructionsFile: string; error: string } | undefined,
  s: Style,
): string {
  if (!b) return s.dim("not reported (an older loopd)");
  if (!b.tokens) return s.dim(`not counted: ${b.error}`);
  const what = `system prompt, ${b.tools} tools${b.instructionsFile ? `, ${b.instructionsFile}` : ""}`;
  const head = `${b.tokens.toLocaleString("en-US")} tokens of ${b.budgetTokens.toLocaleString("en-US")} (${what})`;
  return b.tokens > b.budgetTokens
    ? s.red(
        `${head}: over budget by ${(b.tokens - b.budgetTokens).toLocaleString("en-US")}; every new session pays it before a word of its own`,
      )
    : head;
}

const indent = (t: string) =>
  t
    .split("\n")
    .map((l) => `  ${l}`)
    .join("\n");
