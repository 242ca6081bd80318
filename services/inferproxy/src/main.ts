#!/usr/bin/env node
import {
  InferService,
  addService,
  configPathFromArgs,
  createLogger,
  loadConfig,
  runMain,
  startDaemon,
  exitOnVersionFlag,
} from "@boxmaker/common";
import { configSchema } from "./config.js";
import { InferProxy } from "./service.js";
import type { SelfTestResult } from "./self-test.js";

// `--version`: the package's version, before anything else happens.
exitOnVersionFlag(import.meta.url);

runMain(async () => {
  const config = loadConfig(configSchema, configPathFromArgs(process.argv, "BOXMAKER_INFERPROXY_CONFIG"));
  const log = createLogger("inferproxy", config.log_level);
  let onSelfTest: (r: SelfTestResult) => void = () => undefined;
  const proxy = new InferProxy({ config, log, onSelfTest: (r) => onSelfTest(r) });
  const daemon = await startDaemon({
    name: "inferproxy",
    socketPath: config.socket,
    log,
    register: (server, calls) => addService(server, InferService, proxy.impl(), calls),
    onStop: () => proxy.close(),
  });

  // Status is served from here on; READY=1 waits for a server that matches the contract.
  let readySent = false;
  onSelfTest = (r) => {
    if (r.passed) {
      log.info({ upstream: proxy.client.label, build: proxy.monitor.props?.build_info }, "self-test passed");
      if (!readySent) {
        readySent = true;
        void daemon.ready(`serving; llama-server ${proxy.monitor.props?.build_info ?? "?"} matches the contract`);
      } else {
        void daemon.status("llama-server is back and matches the contract");
      }
      return;
    }
    log.error(
      {
        expected: {
          template_sha256: r.expectedTemplateSha256,
          n_ctx: r.expectedNCtx,
          total_slots: r.expectedTotalSlots,
        },
        actual: { template_sha256: r.actualTemplateSha256, n_ctx: r.actualNCtx, total_slots: r.actualTotalSlots },
        mismatches: r.mismatches,
      },
      "self-test failed: llama-server does not match the contract; completions are refused",
    );
    void daemon.status(`self-test failed: ${r.mismatches.join("; ")}`);
  };
  await proxy.start();
});
