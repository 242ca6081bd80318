import type { LoopClient } from "../connection.js";
import type { Style } from "./style.js";
import { probeSentence } from "./template-probe.js";

/** How long chat waits for the line before its prompt: a slow status is not worth a slow start. */
const STATUS_WAIT_MS = 3_000;

/**
 * The server a chat talks to, in one line before its prompt: the model and
 * the template probe's verdict (whether earlier turns stay byte-identical, so
 * the cache is reused). What no other harness can show belongs on the normal
 * screen, not only in `status`. Undefined when the status does not come.
 */
export async function serverLine(client: LoopClient, s: Style): Promise<string | undefined> {
  try {
    const { infer } = await client.status({}, { timeoutMs: STATUS_WAIT_MS });
    if (!infer) return undefined;
    return `${s.dim(`${infer.model || "the model"} · `)}${probeSentence(infer.templateProbe, s)}`;
  } catch {
    return undefined;
  }
}
