#!/usr/bin/env node
import {
  BrokerService,
  addService,
  createLogger,
  lockStateDir,
  runMain,
  startDaemon,
  daemonConfigPath,
} from "@boxmaker/common";
import { Broker } from "./broker.js";
import { loadCheckedBrokerConfig } from "./config-check.js";
import { brokerService } from "./service.js";

// `--help`, `--version` and a mistyped flag end here, before anything is read or created.
const configPath = daemonConfigPath(
  {
    name: "brokerd",
    envVar: "BOXMAKER_BROKERD_CONFIG",
    about: "Boxmaker's tool broker: runs the agent's tool calls under policy, in the sandbox.",
    check: (path) => void loadCheckedBrokerConfig(path),
  },
  import.meta.url,
);

runMain(async () => {
  const config = loadCheckedBrokerConfig(configPath);
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
