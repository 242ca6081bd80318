import type { ClientOf, InferService, Logger } from "@boxmaker/common";
import { messageOf } from "@boxmaker/common";

/**
 * Counts by the served model's tokenizer, through inferproxy (CountTokens).
 * A count that cannot be had (an older inferproxy, a server without
 * /apply-template, a server that is down) is undefined: the caller falls back
 * to its estimate, and a prompt the server then refuses is made to fit from
 * the count the refusal carries.
 */
export class ServerTokens {
  private warned = false;

  constructor(
    private readonly infer: Pick<ClientOf<typeof InferService>, "countTokens">,
    private readonly log: Logger,
  ) {}

  /** The prompt's tokens as a completion with these messages and tools would read them. */
  async prompt(messagesJson: string, toolsJson: string, signal: AbortSignal): Promise<number | undefined> {
    const r = await this.call({ messagesJson, toolsJson, texts: [] }, signal);
    return r?.promptTokens;
  }

  /** Each text's tokens. */
  async texts(texts: readonly string[], signal: AbortSignal): Promise<number[] | undefined> {
    if (texts.length === 0) return [];
    const r = await this.call({ messagesJson: "", toolsJson: "", texts: [...texts] }, signal);
    return r && r.textTokens.length === texts.length ? r.textTokens : undefined;
  }

  private async call(req: { messagesJson: string; toolsJson: string; texts: string[] }, signal: AbortSignal) {
    try {
      return await this.infer.countTokens(req, { signal, timeoutMs: 30_000 });
    } catch (err) {
      signal.throwIfAborted();
      // Once per process: every compaction would say the same.
      if (!this.warned)
        this.log.warn({ err: messageOf(err) }, "the server cannot count tokens; compaction estimates from bytes");
      this.warned = true;
      return undefined;
    }
  }
}
