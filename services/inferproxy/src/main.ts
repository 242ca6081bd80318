#!/usr/bin/env node
import { existsSync } from "node:fs";
import {
  InferService,
  addService,
  createLogger,
  loadConfig,
  lockStateDir,
  runMain,
  startDaemon,
  daemonConfigPath,
} from "@boxmaker/common";
import { configSchema } from "./config.js";
import { acceptCommand, differences } from "./server-check/contract-refusal.js";
import { checkContractTable } from "./server-check/contract-table.js";
import { InferProxy } from "./service.js";
import type { SelfTestResult } from "./server-check/self-test.js";

// `--help`, `--version` and a mistyped flag end here, before anything is read or created.
const configPath = daemonConfigPath(
  {
    name: "inferproxy",
    envVar: "BOXMAKER_INFERPROXY_CONFIG",
    about: "Boxmaker's model proxy: the one client of llama-server, checking it against the contract.",
    check: (path) => checkContractTable(loadConfig(configSchema, path).contracts, path),
  },
  import.meta.url,
);

runMain(async () => {
  const config = loadConfig(configSchema, configPath);
  checkContractTable(config.contracts, configPath ?? "inferproxy config");
  const log = createLogger("inferproxy", config.log_level);
  // The parked caches it erases and caps: two proxies on one directory would each count the other's files.
  // Not created here: llama-server (or systemd's StateDirectory=) makes it, and until it exists there is
  // nothing to erase (Status says the directory cannot be read).
  const slotDir = config.slot_files.dir;
  const lock =
    slotDir && existsSync(slotDir)
      ? await lockStateDir(slotDir, { daemon: "inferproxy", socket: config.socket, key: "slot_files.dir" })
      : undefined;
  if (slotDir && !lock) log.warn({ dir: slotDir }, "slot_files.dir does not exist: parked caches are not managed");
  let onSelfTest: (r: SelfTestResult) => void = () => undefined;
  const proxy = new InferProxy({ config, log, onSelfTest: (r) => onSelfTest(r) });
  const accept = acceptCommand(configPath);
  proxy.monitor.acceptCommand = accept;
  const daemon = await startDaemon({
    name: "inferproxy",
    socketPath: config.socket,
    log,
    register: (server, calls) => addService(server, InferService, proxy.impl(), calls),
    onStop: async () => {
      await proxy.close();
      lock?.release();
    },
  });

  // Status is served from here on. READY=1 follows the first self-test whether it passed or not: a
  // server that does not match is refused per request (FAILED_PRECONDITION saying what differs), and
  // holding the unit in "activating" instead would block boxmaker.target and loopd behind it for the
  // whole start timeout, leaving `boxmaker status` nothing to ask. STATUS= says which it is.
  let readySent = false;
  onSelfTest = (r) => {
    let text: string;
    if (r.passed) {
      log.info({ upstream: proxy.client.label, build: proxy.monitor.props?.build_info }, "self-test passed");
      text = readySent
        ? "llama-server is back and matches the contract"
        : `serving; llama-server ${proxy.monitor.props?.build_info ?? "?"} matches the contract`;
    } else {
      const facts = (template_sha256: string, n_ctx_per_slot: number, total_slots: number) => ({
        template_sha256,
        n_ctx_per_slot,
        total_slots,
      });
      log.error(
        {
          expected: facts(r.expectedTemplateSha256, r.expectedNCtx, r.expectedTotalSlots),
          actual: facts(r.actualTemplateSha256, r.actualNCtx, r.actualTotalSlots),
          mismatches: r.mismatches,
          accept,
        },
        "self-test failed: llama-server does not match the contract; completions are refused",
      );
      text = `refusing completions: llama-server does not match the contract (${differences(r)}); to use it as it is: ${accept}`;
    }
    if (readySent) {
      void daemon.status(text);
    } else {
      readySent = true;
      void daemon.ready(text);
    }
  };
  await proxy.start();
});
