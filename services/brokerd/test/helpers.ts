import { pino } from "pino";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Broker } from "../src/broker.js";
import type { CallOutcome } from "../src/call-outcome.js";
import { parseBrokerConfig } from "../src/config.js";
import type { BrokerConfig } from "../src/config-types.js";
import { tempDir } from "../../../test/support/tmp.js";
import { toolPath } from "../../../test/support/requirements.js";

/** The bwrap on PATH (not the config's default /usr/bin/bwrap), so a machine without it runs tests the same way. */
export const bwrapPath = toolPath("bwrap") ?? "/nonexistent/bwrap";

export const silent = pino({ level: "silent" });

export interface Rig {
  dir: string;
  ws: string;
  outside: string;
  broker: Broker;
  config: BrokerConfig;
  call(name: string, args: unknown, session?: string): Promise<CallOutcome>;
  cleanup(): Promise<void>;
}

/** A broker over a fresh workspace, with a sibling directory that must never be touched. */
export async function rig(
  overrides: Record<string, unknown> | ((dirs: { ws: string; outside: string }) => Record<string, unknown>) = {},
  setup?: (dirs: { ws: string; outside: string }) => void,
): Promise<Rig> {
  const t = tempDir("bxb-");
  const ws = join(t.dir, "ws");
  const outside = join(t.dir, "outside");
  mkdirSync(ws);
  mkdirSync(outside);
  setup?.({ ws, outside });
  if (typeof overrides === "function") overrides = overrides({ ws, outside });
  const sandbox = { bwrap_path: bwrapPath, ...(overrides.sandbox as Record<string, unknown> | undefined) };
  const config = parseBrokerConfig({
    socket: join(t.dir, "b.sock"),
    state_dir: join(t.dir, "state"),
    workspace_roots: [ws],
    log_level: "silent",
    ...overrides,
    sandbox,
  });
  const broker = await Broker.open(config, { log: silent });
  let n = 0;
  return {
    dir: t.dir,
    ws,
    outside,
    broker,
    config,
    call: (name, args, session = "s1") =>
      broker.call({
        sessionId: session,
        callId: `c${++n}`,
        name,
        argumentsJson: typeof args === "string" ? args : JSON.stringify(args),
      }),
    cleanup: async () => {
      await broker.close();
      t.cleanup();
    },
  };
}
