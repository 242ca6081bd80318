import type { Logger } from "@boxmaker/common";
import type { UpstreamConfig } from "../config.js";
import { LlamaClient } from "../upstream/llama-client.js";
import { templateSha256, type Props } from "../server-check/self-test.js";
import { probeNotRun, type TemplateProbeResult } from "./template-probe.js";
import { probeTemplate } from "./template-probe-io.js";

/**
 * The template probe as the service runs it: started after every self-test
 * on the server just checked, a newer probe replacing an older one, and its
 * result kept for completions and Status.
 */
export class TemplateProbeRunner {
  /** What the server's chat template does with Boxmaker's conversations (template-probe.ts), re-probed at every self-test. */
  result: TemplateProbeResult = probeNotRun();
  private probing: Promise<void> | undefined;
  /**
   * The probe's own client: not the checked one, so a server that does not
   * match the contract is probed too (what its template will cost is what
   * the operator wants to know before accepting it).
   */
  private readonly client: LlamaClient;

  constructor(
    upstream: UpstreamConfig,
    private readonly timeoutMs: number,
    private readonly log: Logger,
  ) {
    this.client = new LlamaClient(upstream);
  }

  /** Probes the template of the server the self-test just checked; a newer self-test's probe replaces it. */
  start(props: Props | undefined): void {
    const template = props?.chat_template;
    const sha = typeof template === "string" ? templateSha256(template) : "";
    const run = probeTemplate(this.client, this.timeoutMs, sha, props).then((r) => {
      if (this.probing !== run) return;
      this.result = r;
      this.probing = undefined;
      const facts = { verdict: r.verdict, error: r.error || undefined, warnings: r.warnings, template_sha256: sha };
      if (r.ran && r.verdict === "ok") this.log.info(facts, `template probe: ${r.summary}`);
      else this.log.warn(facts, `template probe: ${r.summary}`);
    });
    this.probing = run;
  }

  /** Waits (at most `ms`) for a probe under way, so what is judged is this server's template. */
  async settled(ms: number): Promise<void> {
    const p = this.probing;
    if (!p) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
