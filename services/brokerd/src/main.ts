#!/usr/bin/env node
import {
  BrokerService,
  addService,
  configPathFromArgs,
  createLogger,
  lockStateDir,
  runMain,
  startDaemon,
  exitOnVersionFlag,
} from "@boxmaker/common";
import { Broker } from "./broker.js";
import { loadBrokerConfig } from "./config.js";
import { brokerService } from "./service.js";

// `--version`: the package's version, before anything else happens.
exitOnVersionFlag(import.meta.url);

runMain(async () => {
  const configPath = configPathFromArgs(process.argv.slice(2), "BOXMAKER_BROKERD_CONFIG");
  const config = loadBrokerConfig(configPath);
  const log = createLogger("brokerd", config.log_level);
  // Before the audit log, blobs and proposals are opened: two brokers would each compact and rotate them.
  const lock = await lockStateDir(config.state_dir, { daemon: "brokerd", socket: config.socket, key: "state_dir" });
  const broker = await Broker.open(config, { log, ...(configPath ? { configPath } : {}) });
  const daemon = await startDaemon({
    name: "brokerd",
    socketPath: config.socket,
    log,
    register: (server, calls) => addService(server, BrokerService, brokerService(broker), calls),
    onStop: async () => {
      await broker.close();
      lock.release();
    },
  });
  const s = broker.status();
  await daemon.ready(`${s.coreTools} core tools, ${s.extendedTools} extended, sandbox ${broker.sandbox.state}`);
});
