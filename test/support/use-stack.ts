import { afterAll, beforeAll } from "vitest";
import { Stack, type StackOptions } from "./stack.js";
import { tempDir } from "./tmp.js";
import { loopClient, type LoopClient } from "./loop-client.js";

export interface StackFixture {
  readonly stack: Stack;
  /** A LoopService client on the stack's loopd. */
  readonly client: LoopClient;
  readonly dir: string;
}

/**
 * The whole system for one describe block: started in a fresh temp dir before
 * its tests, stopped and removed after them.
 */
export function useStack(prefix: string, opts: StackOptions = {}): StackFixture {
  const fx = {} as { stack: Stack; client: LoopClient; dir: string; cleanup?: () => void };
  beforeAll(async () => {
    const tmp = tempDir(prefix);
    fx.dir = tmp.dir;
    fx.cleanup = tmp.cleanup;
    fx.stack = await new Stack(tmp.dir, opts).start();
    fx.client = loopClient(fx.stack.sockets.loopd);
  });
  afterAll(async () => {
    fx.client?.close();
    await fx.stack?.stop();
    fx.cleanup?.();
  });
  return fx;
}
