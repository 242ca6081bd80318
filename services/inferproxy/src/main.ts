#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  InferService,
  addService,
  configPathFromArgs,
  createLogger,
  loadConfig,
  runMain,
  startDaemon,
} from "@boxmaker/common";
import { configSchema } from "./config.js";
import { InferProxy } from "./service.js";
import type { SelfTestResult } from "./self-test.js";


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
        expected: { template_sha256: r.expectedTemplateSha256, n_ctx: r.expectedNCtx, total_slots: r.expectedTotalSlots },
        actual: { template_sha256: r.actualTemplateSha256, n_ctx: r.actualNCtx, total_slots: r.actualTotalSlots },
        mismatches: r.mismatches,
      },
      "self-test failed: llama-server does not match the contract; completions are refused",
    );
    void daemon.status(`self-test failed: ${r.mismatches.join("; ")}`);
  };
  await proxy.start();
});
