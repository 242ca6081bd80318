#!/usr/bin/env node
import { join } from "node:path";
import {
  BrokerService,
  ConfigError,
  InferService,
  LoopService,
  addService,
  createClient,
  createLogger,
  lockStateDir,
  messageOf,
  runMain,
  startDaemon,
  daemonConfigPath,
} from "@boxmaker/common";
import { peerDeadlines } from "./peer-deadlines.js";
import { loadLoopdConfig } from "./config-check.js";
import { SessionStore } from "./sessions/session-store.js";
import { SessionRunner } from "./loop/session-runner.js";
import { CompletionChannel } from "./model-requests/completion-channel.js";
import { Schedules } from "./schedules.js";
import { loopService } from "./service.js";
import { reconcileParkedFiles } from "./slots/parked-files-upkeep.js";
import { ServerSlots } from "./slots/server-slots.js";
import { SlotMapCheck } from "./slots/slot-map.js";

/** How long start waits for inferproxy's self-test to say the server's slot count (a loading server says it later). */
const START_CHECK_WAIT_MS = 5_000;
/** How often unused session logs are checked for compression. */
const LOG_SWEEP_MS = 60 * 60_000;

// `--help`, `--version` and a mistyped flag end here, before anything is read or created.
const configPath = daemonConfigPath(
  {
    name: "loopd",
    envVar: "BOXMAKER_LOOPD_CONFIG",
    about: "Boxmaker's agent loop: sessions, turns, schedules; serves the CLI on its socket.",
    check: (path) => void loadLoopdConfig(path),
  },
  import.meta.url,
);

runMain(async () => {
  const config = loadLoopdConfig(configPath);
  const log = createLogger("loopd", config.log_level);
  // Before anything reads or writes a session: a second loopd on these logs would lose turns.
  const lock = await lockStateDir(config.state_dir, { daemon: "loopd", socket: config.socket, key: "state_dir" });
  const store = new SessionStore(config.state_dir, log);
  const { loaded, interrupted } = store.loadAll();
  log.info({ loaded, interrupted }, "sessions restored");

  // A peer that is restarting is waited for (peer_wait_ms), not failed at while the channel backs off.
  const peerWait = (peer: string) => ({ peer, peerWaitMs: config.peer_wait_ms });
  // Every unary call ends: a peer that takes a call and never answers it fails that call, named.
  const deadlines = peerDeadlines(config.peer_call_timeout_ms);
  const inferClient = createClient(InferService, config.inferproxy_socket, {
    ...peerWait("inferproxy"),
    ...deadlines.inferproxy,
  });
  // Model requests go over one long-lived stream: no gRPC call set-up per request.
  const channel = new CompletionChannel(inferClient, config.peer_wait_ms);
  const infer = { ...inferClient, complete: channel.complete };
  const broker = createClient(BrokerService, config.brokerd_socket, { ...peerWait("brokerd"), ...deadlines.brokerd });
  const serverSlots = new ServerSlots(inferClient, new SlotMapCheck(config.slots), log, config.server_check_ms);
  // A map naming a slot the server lacks would fail every turn of that role when it comes (a schedule at
  // night): refuse it now, in one line. A server still loading is checked when its self-test has run.
  await serverSlots.first(START_CHECK_WAIT_MS);
  const refusal = serverSlots.check.refusal();
  if (refusal) throw new ConfigError(refusal);
  serverSlots.follow();
  const runner = new SessionRunner({ store, infer, broker, log, config, serverSlots });
  // Counted again after each self-test (another model or template); over its budget is logged.
  serverSlots.onSelfTest = (at) => void runner.baseline.report(at, AbortSignal.timeout(30_000)).catch(() => undefined);
  const schedules = new Schedules(
    config.state_dir,
    config.schedules,
    async (sch) => {
      let id = "";
      try {
        const s = await runner.create("scheduled", `schedule ${sch.id}`);
        id = s.id;
        const r = await runner.start(s.id, sch.prompt);
        if (r.error) throw r.error;
      } catch (err) {
        // Nobody watches a scheduled run: the notification hook is how a person hears of it.
        runner.hookEvents.notify(id, "schedule_failed", `schedule ${sch.id} failed: ${messageOf(err)}`);
        throw err;
      }
    },
    log,
  );

  const evictIdle = () => {
    const dropped = store.evictIdle(Date.now(), config.session_idle_ms);
    if (dropped.length) log.debug({ dropped: dropped.length, inMemory: store.inMemory }, "idle sessions left memory");
  };
  const idleSweep =
    config.session_idle_ms > 0 ? setInterval(evictIdle, Math.min(60_000, config.session_idle_ms)).unref() : undefined;

  // Logs of sessions nobody uses are compressed at start and hourly: an unused log only ages by the hour.
  const compressLogs = () => {
    const pass = store.compressPast(config.session_logs, Date.now());
    if (pass.compressed)
      log.info(
        { compressed: pass.compressed, bytes_before: pass.bytesBefore, bytes_after: pass.bytesAfter },
        "session logs of unused sessions compressed",
      );
    for (const f of pass.failed)
      log.warn({ session: f.id, err: f.why }, "could not compress a session log; left as it is");
  };
  compressLogs();
  const logSweep = setInterval(compressLogs, LOG_SWEEP_MS).unref();

  let upkeep: ReturnType<typeof reconcileParkedFiles> | undefined;
  const daemon = await startDaemon({
    name: "loopd",
    socketPath: config.socket,
    log,
    register: (server, calls) =>
      addService(
        server,
        LoopService,
        loopService({
          runner,
          store,
          infer,
          broker,
          schedules,
          sockets: { loopd: config.socket, inferproxy: config.inferproxy_socket, brokerd: config.brokerd_socket },
          sessionsDir: join(config.state_dir, "sessions"),
          sessionLogs: config.session_logs,
          budgets: config.budgets,
          maxTokensPerRequest: config.max_tokens,
        }),
        calls,
      ),
    onStopping: async () => {
      clearInterval(idleSweep);
      clearInterval(logSweep);
      serverSlots.stop();
      upkeep?.stop();
      schedules.stop();
      await runner.drain(
        "loopd is stopping (a restart or shutdown); the session keeps your message and what was written so far: `boxmaker chat -c` continues it once loopd is back",
      );
    },
    onStop: () => {
      channel.close();
      inferClient.close();
      broker.close();
      store.closeAll();
      lock.release();
    },
  });
  // Parked files of sessions deleted or archived while loopd was down, or before a crash, go now.
  upkeep = reconcileParkedFiles(runner.parking, store, log);
  const missed = schedules.begin();
  await daemon.ready(`${loaded} sessions, ${interrupted.length} interrupted, ${missed.length} schedules missed runs`);
});
