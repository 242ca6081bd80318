import { afterAll, beforeAll } from "vitest";
import { join } from "node:path";
import type { Stack, StackOptions } from "../../support/stack.js";
import { tempDir } from "../../support/tmp.js";
import { loopClient, type LoopClient } from "../../support/loop-client.js";
import { RealLlama, startStackOn, type RealLlamaOptions } from "./real-llama.js";

export interface RealStackFixture {
  readonly llama: RealLlama;
  readonly stack: Stack;
  /** A LoopService client on the stack's loopd. */
  readonly client: LoopClient;
  readonly dir: string;
}

/**
 * A real llama-server and the three daemons against it for one describe
 * block (test/support/use-stack.ts for the real tier): started in a fresh
 * temp dir once inferproxy's self-test passed, stopped and removed after.
 */
export function useRealStack(
  prefix: string,
  llamaOpts: Omit<RealLlamaOptions, "socketPath">,
  stackOpts: Omit<StackOptions, "upstream"> = {},
): RealStackFixture {
  const fx = {} as { llama: RealLlama; stack: Stack; client: LoopClient; dir: string; cleanup?: () => void };
  beforeAll(async () => {
    const tmp = tempDir(prefix);
    fx.dir = tmp.dir;
    fx.cleanup = tmp.cleanup;
    fx.llama = await new RealLlama({ ...llamaOpts, socketPath: join(tmp.dir, "llama.sock") }).start();
    fx.stack = await startStackOn(fx.llama, tmp.dir, stackOpts);
    fx.client = loopClient(fx.stack.sockets.loopd);
  }, 120_000);
  afterAll(async () => {
    fx.client?.close();
    await fx.stack?.stop();
    await fx.llama?.close();
    fx.cleanup?.();
  });
  return fx;
}
