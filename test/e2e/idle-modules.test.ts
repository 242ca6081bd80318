import { afterAll, describe, expect, it } from "vitest";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { useStack } from "../support/use-stack.js";
import { doneOf, newSession, turn } from "../support/loop-client.js";

/**
 * What a daemon loads is what it holds in memory for as long as it runs. Each of these
 * was loaded at start once and cost an idle daemon megabytes of heap (docs/benchmarks.md,
 * `footprint`): Node's bundled undici (its fetch, pulled in by an ES import of node:http
 * or by npm undici's index touching the global `Headers`), npm undici's index, cron-parser
 * with luxon for a stack without schedules, the diff library before any change is shown,
 * the MCP SDK with no MCP server configured, an HTML parser before any page is fetched, a Jinja renderer for a template that needs
 * no correction. The daemons run for real, take a turn with a
 * tool call, and report on exit what they loaded.
 */
describe("modules a daemon loads for work it has not been given", () => {
  const reports = tempDir("bxmr-");
  afterAll(() => reports.cleanup());
  const reportDir = reports.dir;
  // The daemons inherit the test's environment.
  process.env.BOXMAKER_MODULE_REPORT_DIR = reportDir;
  const t = useStack("bxm-", {
    nodeArgs: ["--require", join(repoRoot, "test/fixtures/module-report/report.cjs")],
  });

  it("stay unloaded through a turn that reads a file", async () => {
    writeFileSync(join(t.stack.workspace, "notes.txt"), "hello\n");
    t.stack.sim.enqueue({ toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path": "notes.txt"}' }] });
    t.stack.sim.enqueue({ content: "It says hello." });
    const id = await newSession(t.client, "modules");
    const done = doneOf(await turn(t.client, id, "what does notes.txt say?"));
    expect(done.finalText).toBe("It says hello.");
    expect(done.iterations).toBe(2);
    await t.stack.stop();

    const written = readdirSync(reportDir).map(
      (f) =>
        JSON.parse(readFileSync(join(reportDir, f), "utf8")) as { main: string; builtins: string[]; files: string[] },
    );
    const of = (daemon: string) => {
      const r = written.find((x) => x.main.includes(`/services/${daemon}/dist/`));
      if (!r) throw new Error(`no module report from ${daemon}`);
      return { builtins: r.builtins.join("\n"), files: r.files.join("\n") };
    };
    for (const daemon of ["inferproxy", "brokerd", "loopd"]) {
      const r = of(daemon);
      // The reporter sees what is loaded: every daemon speaks gRPC.
      expect(r.files).toContain("/node_modules/@grpc/grpc-js/");
      expect(r.builtins, `${daemon} loaded Node's fetch`).not.toContain("internal/deps/undici");
    }
    expect(of("inferproxy").files).toContain("/node_modules/undici/lib/dispatcher/pool.js");
    expect(of("inferproxy").files).not.toMatch(/\/node_modules\/undici\/index\.js|\/undici\/lib\/web\//);
    // The template probe ran (the turn waits for it); its Jinja is for templates that need a correction only.
    expect(of("inferproxy").files).toContain("/services/inferproxy/dist/template-probe/template-probe.js");
    expect(of("inferproxy").files).not.toMatch(/\/node_modules\/@huggingface\/jinja\//);
    expect(of("loopd").files).not.toMatch(/\/node_modules\/(cron-parser|luxon)\//);
    expect(of("brokerd").files).not.toMatch(/\/node_modules\/(diff|@modelcontextprotocol|htmlparser2|entities)\//);
  });
});
