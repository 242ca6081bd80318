#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { BrokerService, addService, configPathFromArgs, createLogger, runMain, startDaemon } from "@boxmaker/common";
import { Broker } from "./broker.js";
import { loadBrokerConfig } from "./config.js";
import { brokerService } from "./service.js";


// `--version`: the package's version, before anything else happens.
if (process.argv.includes("--version")) {
  process.stdout.write(`${packageVersion()}\n`);
  process.exit(0);
}

function packageVersion(): string {
  // dist/main.js → the package's package.json (one or two levels up, bundled or not).
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++, dir = dirname(dir)) {
    try {
      const v = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version?: unknown }).version;
      if (typeof v === "string") return v;
    } catch {
      // not here: one level up
    }
  }
  return "unknown";
}

runMain(async () => {
  const configPath = configPathFromArgs(process.argv.slice(2), "BOXMAKER_BROKERD_CONFIG");
  const config = loadBrokerConfig(configPath);
  const log = createLogger("brokerd", config.log_level);
  const broker = await Broker.open(config, { log, ...(configPath ? { configPath } : {}) });
  const daemon = await startDaemon({
    name: "brokerd",
    socketPath: config.socket,
    log,
    register: (server, calls) => addService(server, BrokerService, brokerService(broker), calls),
    onStop: () => broker.close(),
  });
  const s = broker.status();
  await daemon.ready(`${s.coreTools} core tools, ${s.extendedTools} extended, sandbox ${broker.sandbox.state}`);
});
