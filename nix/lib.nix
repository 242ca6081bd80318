# Pure functions from `services.boxmaker` option values to llama-server's
# arguments and the daemons' JSON config files. Builtins only, no nixpkgs, so
# test/deploy/nix-configs.test.ts can evaluate them with plain
# `nix-instantiate --eval` and check the output against each daemon's config
# schema (services/<daemon>/src/config.ts, the one source of truth for keys).
let
  # The facts the daemons, `boxmaker up` and deploy/ share, generated from
  # services/common/src/stack-defaults.ts (Nix cannot read TypeScript).
  defaults = builtins.fromJSON (builtins.readFile ./stack-defaults.json);
  runtimeDir = defaults.dirs.runtime;
  stateDir = defaults.dirs.state;
  withoutNulls = attrs: builtins.removeAttrs attrs (builtins.filter (n: attrs.${n} == null) (builtins.attrNames attrs));
in
rec {
  inherit defaults runtimeDir stateDir;

  inherit (defaults) sockets;

  slotSavePath = defaults.dirs.slotSave;

  # Which slot each role's sessions run on with `slots` slots: the three-slot
  # map (main 0, subagent 1, scheduled 2) with each role moved down to the
  # last slot that exists. Two slots: subagents and scheduled work share slot
  # 1, the main session keeps its own; one slot: everything on slot 0.
  slotMapFor = slots: builtins.mapAttrs (_: id: if id < slots then id else if slots > 0 then slots - 1 else 0) defaults.slotIds;

  # The same order as llamaServerArgs in stack-defaults.ts;
  # deploy/systemd/boxmaker-llama-server.service is compared with both by the
  # tests. --ctx-size is the whole KV: with --no-kv-unified each slot gets
  # contextPerSlot of it.
  llamaServerArgs = cfg:
    [
      "--host" sockets.llama
      "--model" (toString cfg.llamaServer.model)
      "--parallel" (toString cfg.slots)
      "--ctx-size" (toString (cfg.slots * cfg.contextPerSlot))
      "--cache-type-k" cfg.kvCacheType
      "--cache-type-v" cfg.kvCacheType
    ]
    ++ defaults.llamaFixedFlags
    ++ [ "--slot-save-path" slotSavePath ]
    ++ (if cfg.llamaServer.chatTemplateFile or null == null then [ ] else [ "--chat-template-file" (toString cfg.llamaServer.chatTemplateFile) ])
    ++ cfg.llamaServer.extraFlags;

  # A recursive merge of `over` into `base`; enough for the freeform settings.
  merge = base: over:
    base // builtins.mapAttrs
      (n: v: if builtins.isAttrs v && builtins.isAttrs (base.${n} or null) then merge base.${n} v else v)
      over;

  inferproxyConfig = cfg: merge ({
    socket = sockets.inferproxy;
    upstream = if cfg.upstream.url != null then { url = cfg.upstream.url; } else { socket_path = cfg.upstream.socket; };
    sampling = {
      temperature = cfg.sampling.temperature;
      top_p = cfg.sampling.topP;
      top_k = cfg.sampling.topK;
      min_p = cfg.sampling.minP;
    };
    # What the self-test expects is what llamaServerArgs asks for (an
    # external server: what the operator says it runs).
    contract = {
      template_sha256 = cfg.contract.templateSha256;
      n_ctx_per_slot = cfg.contextPerSlot;
      total_slots = cfg.slots;
    };
    contracts = map (c: {
      inherit (c) model;
      template_sha256 = c.templateSha256;
      n_ctx_per_slot = c.nCtxPerSlot;
      total_slots = c.totalSlots;
      probe_verdict = c.probeVerdict;
    }) (cfg.contracts or [ ]);
    log_level = cfg.logLevel;
  } // (if cfg.livenessWindowMs == null then { } else { liveness_timeout_ms = cfg.livenessWindowMs; })) cfg.settings.inferproxy;

  brokerdConfig = { cfg, bwrapPath, socatPath }: merge {
    socket = sockets.brokerd;
    state_dir = defaults.dirs.brokerdState;
    workspace_roots = cfg.workspaceRoots;
    # Session logs, blobs, slot saves, sockets and config: never reachable by tools.
    protected_paths = [ "/etc/boxmaker" stateDir runtimeDir ];
    policy = {
      defaults = cfg.policy.defaults;
      rules = map (r: withoutNulls {
        inherit (r) name tool effect paths hosts;
        command_prefixes = r.commandPrefixes;
      }) cfg.policy.rules;
    };
    sandbox = if cfg.sandbox.enable
      then {
        mode = "bwrap"; bwrap_path = bwrapPath; network = cfg.sandbox.network;
        # Network for commands through brokerd's allowlist proxy (docs/operations.md, "Network for commands").
        net_proxy = { enabled = cfg.sandbox.netProxy.enable or false; socat_path = socatPath; };
      }
      else { mode = "none"; allow_unsandboxed = true; };
    mcp_servers = builtins.mapAttrs (_: s: withoutNulls {
      inherit (s) transport command args env cwd url headers risk;
      timeout_ms = s.timeoutMs;
    }) cfg.mcpServers;
    log_level = cfg.logLevel;
  } cfg.settings.brokerd;

  loopdConfig = cfg: merge {
    socket = sockets.loopd;
    state_dir = defaults.dirs.loopdState;
    inferproxy_socket = sockets.inferproxy;
    brokerd_socket = sockets.brokerd;
    slots = { inherit (cfg.slotMap) main subagent scheduled; };
    max_tokens = cfg.maxTokens;
    budgets = {
      max_iterations = cfg.budgets.maxIterations;
      max_total_tokens = cfg.budgets.maxTotalTokens;
      max_wall_ms = cfg.budgets.maxWallMs;
      max_thinking_tokens = cfg.budgets.maxThinkingTokens;
    };
    # Parking saves slots through llama-server's --slot-save-path, which only
    # the server this module runs is known to have.
    parking.enabled = cfg.llamaServer.enable;
    schedules = map (s: { inherit (s) id cron prompt; }) cfg.schedules;
    log_level = cfg.logLevel;
  } cfg.settings.loopd;
}
