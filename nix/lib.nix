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

  # The memory llama-server needs, as the CLI's `boxmaker memory-plan`
  # computes it (services/cli/src/memory/memory-plan.ts; test/nix checks the
  # two agree): the weights, the KV cache llama.cpp allocates for every slot's
  # context (the whole context padded to 256, then each slot's share), and a
  # stated compute margin. `facts` is what `boxmaker memory-plan MODEL --nix`
  # prints: layers, kvHeads (one number, or one per layer), headSizeK/V,
  # weightsBytes. The element sizes are stack-defaults' kvCacheTypes.
  memoryPlan = { facts, slots, contextPerSlot, kvCacheType, computeMarginMiB }:
    let
      pad = n: (n + 255) / 256 * 256;
      perSlot = pad ((pad (slots * contextPerSlot)) / slots);
      cells = perSlot * slots;
      kvHeads = if builtins.isList facts.kvHeads then builtins.foldl' builtins.add 0 facts.kvHeads else facts.kvHeads * facts.layers;
      t = defaults.kvCacheTypes.${kvCacheType};
      kBytes = cells * kvHeads * facts.headSizeK * t.bytes / t.block;
      vBytes = cells * kvHeads * facts.headSizeV * t.bytes / t.block;
      computeBytes = computeMarginMiB * 1024 * 1024;
      refusedHead =
        if facts.headSizeK - facts.headSizeK / t.block * t.block != 0 then "K head size ${toString facts.headSizeK}"
        else if facts.headSizeV - facts.headSizeV / t.block * t.block != 0 then "V head size ${toString facts.headSizeV}"
        else null;
    in {
      inherit cells kBytes vBytes computeBytes;
      cellsPerSlot = perSlot;
      kvBytes = kBytes + vBytes;
      totalBytes = facts.weightsBytes + kBytes + vBytes + computeBytes;
      refusal = if refusedHead == null then null
        else "llama-server refuses kvCacheType ${kvCacheType} for this model: its ${refusedHead} is not a multiple of ${kvCacheType}'s block of ${toString t.block}";
    };

  # Bytes as "12.34 GiB" (integer arithmetic, rounded to the hundredth).
  gib = bytes:
    let
      c = (bytes * 100 + 536870912) / 1073741824;
      frac = c - c / 100 * 100;
    in "${toString (c / 100)}.${if frac < 10 then "0" else ""}${toString frac} GiB";

  # A daemon's config file as the module installs it: written, then checked at
  # build by the daemon that reads it (`--check-config`: the checks it makes at
  # start that need no machine), so nixos-rebuild refuses a key it does not
  # know or a schedule that can never fire, instead of the unit exiting 2
  # hours later. `writeText` and `runCommand` are nixpkgs' (passed in: this
  # file stays builtins only).
  checkedConfigFile = { writeText, runCommand, exe, name, value }:
    let unchecked = writeText "boxmaker-${name}-unchecked.json" (builtins.toJSON value);
    in runCommand "boxmaker-${name}.json" { } ''
      if ! ${exe} --check-config ${unchecked}; then
        echo "services.boxmaker: ${name} refuses the config this system gives it (the line above): fix services.boxmaker.settings.${name}, or the option that sets that key" >&2
        exit 1
      fi
      cp ${unchecked} $out
    '' // { inherit unchecked; };

  # Which slot each role's sessions run on with `slots` slots: the table in
  # stack-defaults.ts (slotMaps), which loopd and `boxmaker up` follow too.
  # Two slots: subagents and scheduled work share slot 1, the main session
  # keeps its own; one slot: everything on slot 0; more than the table names
  # leave the rest idle (0 reaches the module's assertion).
  slotMapFor = slots:
    let largest = builtins.length (builtins.attrNames defaults.slotMaps);
    in defaults.slotMaps.${toString (if slots < 1 then 1 else if slots > largest then largest else slots)};

  # Every setting the module gives llama-server, by all the names llama.cpp
  # takes for it (common/arg.cpp: short and long flags, the negated form, the
  # LLAMA_ARG_ variable). The same setting again in extraFlags or environment
  # would fight the option it comes from, and the server that wins is the one
  # inferproxy then refuses at run time.
  llamaSettings = [
    { flags = [ "--host" "--port" ]; env = [ "LLAMA_ARG_HOST" "LLAMA_ARG_PORT" ]; from = "the module (llama-server listens on ${sockets.llama})"; }
    { flags = [ "-m" "--model" "-mu" "--model-url" "-hf" "-hfr" "--hf-repo" ]; env = [ "LLAMA_ARG_MODEL" "LLAMA_ARG_MODEL_URL" "LLAMA_ARG_HF_REPO" ]; from = "llamaServer.model"; }
    { flags = [ "-np" "--parallel" ]; env = [ "LLAMA_ARG_N_PARALLEL" ]; from = "slots"; }
    { flags = [ "-c" "--ctx-size" ]; env = [ "LLAMA_ARG_CTX_SIZE" ]; from = "contextPerSlot (--ctx-size is slots × contextPerSlot)"; }
    { flags = [ "-ctk" "--cache-type-k" "-ctv" "--cache-type-v" ]; env = [ "LLAMA_ARG_CACHE_TYPE_K" "LLAMA_ARG_CACHE_TYPE_V" ]; from = "kvCacheType"; }
    { flags = [ "-kvu" "--kv-unified" "-no-kvu" "--no-kv-unified" ]; env = [ "LLAMA_ARG_KV_UNIFIED" ]; from = "the module (each slot its own context: --no-kv-unified)"; }
    { flags = [ "--jinja" "--no-jinja" ]; env = [ "LLAMA_ARG_JINJA" ]; from = "the module (tool calls need --jinja)"; }
    { flags = [ "-fa" "--flash-attn" ]; env = [ "LLAMA_ARG_FLASH_ATTN" ]; from = "the module (a quantized V cache needs flash attention)"; }
    { flags = [ "--mmap" "--no-mmap" "--load-mode" ]; env = [ "LLAMA_ARG_MMAP" "LLAMA_ARG_LOAD_MODE" ]; from = "the module (--no-mmap)"; }
    { flags = [ "-ngl" "--gpu-layers" "--n-gpu-layers" ]; env = [ "LLAMA_ARG_N_GPU_LAYERS" ]; from = "llamaServer.package (its GPU backend decides --n-gpu-layers)"; }
    { flags = [ "-cram" "--cache-ram" "--cache-idle-slots" "--no-cache-idle-slots" ]; env = [ "LLAMA_ARG_CACHE_RAM" "LLAMA_ARG_CACHE_IDLE_SLOTS" ]; from = "the module (parking keeps slot caches on disk, not in RAM)"; }
    { flags = [ "--slot-save-path" ]; env = [ ]; from = "the module (parking saves slots to ${slotSavePath})"; }
    { flags = [ "--chat-template-file" "--chat-template" ]; env = [ "LLAMA_ARG_CHAT_TEMPLATE_FILE" "LLAMA_ARG_CHAT_TEMPLATE" ]; from = "llamaServer.chatTemplateFile (the contract's template_sha256 follows it)"; }
    { flags = [ "-a" "--alias" ]; env = [ "LLAMA_ARG_ALIAS" ]; from = "llamaServer.alias (the contract table is keyed by it)"; }
  ];

  # The flag an extraFlags word names: "--parallel=2" and "--parallel 2" in
  # one word are --parallel; a value (not starting with "-") names none.
  flagOf = word:
    let m = builtins.match "(-[^= ]+).*" word; in if m == null then null else builtins.head m;

  # "extraFlags sets --parallel, which comes from slots" for each clash, [] when none.
  llamaSettingClashes = cfg:
    let
      flags = builtins.filter (f: f != null) (map flagOf (cfg.llamaServer.extraFlags or [ ]));
      envs = builtins.attrNames (cfg.llamaServer.environment or { });
      clash = s:
        let
          f = builtins.filter (x: builtins.elem x s.flags) flags;
          e = builtins.filter (x: builtins.elem x s.env) envs;
        in
        (map (x: "services.boxmaker.llamaServer.extraFlags sets ${x}, which comes from ${s.from}: remove it from extraFlags.") f)
        ++ (map (x: "services.boxmaker.llamaServer.environment sets ${x}, which comes from ${s.from}: remove it from environment.") e);
    in
    builtins.concatMap clash llamaSettings;

  # llama-server's --sleep-idle-seconds unloads the model after that long idle,
  # and with it every slot's KV: a parked session's cache is gone.
  sleepsWhenIdle = cfg:
    builtins.any (f: f == "--sleep-idle-seconds") (map flagOf (cfg.llamaServer.extraFlags or [ ]))
    || (cfg.llamaServer.environment or { }) ? LLAMA_ARG_SLEEP_IDLE_SECONDS;

  # Whether the llama.cpp build offloads to a GPU: nixpkgs' llama-cpp carries
  # its backend switches in passthru (and as attributes of the derivation).
  gpuBackends = pkg:
    builtins.filter (b: pkg != null && ((pkg.passthru or { }).${b} or pkg.${b} or false) == true)
      [ "vulkanSupport" "cudaSupport" "rocmSupport" ];

  # The template_sha256 llama-server reports for a --chat-template-file: the
  # file's text less one trailing newline (its Jinja engine drops it, as
  # Jinja's keep_trailing_newline = false does; measured on the kit's server:
  # "…\n\n" reports "…\n", "…\r\n" reports "…"). Only a file Nix can read at
  # evaluation (a path in the store or the flake) has one; null otherwise.
  templateFileSha256 = file:
    if file == null || !(builtins.isPath file) then null
    else
      let
        text = builtins.readFile file;
        n = builtins.stringLength text;
        endsWith = suffix: let k = builtins.stringLength suffix; in n >= k && builtins.substring (n - k) k text == suffix;
        trimmed =
          if endsWith "\r\n" then builtins.substring 0 (n - 2) text
          else if endsWith "\n" || endsWith "\r" then builtins.substring 0 (n - 1) text
          else text;
      in
      builtins.hashString "sha256" trimmed;

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
    ++ withoutGpuLayersOnCpu cfg defaults.llamaFixedFlags
    ++ [ "--slot-save-path" slotSavePath ]
    ++ (if cfg.llamaServer.chatTemplateFile or null == null then [ ] else [ "--chat-template-file" (toString cfg.llamaServer.chatTemplateFile) ])
    ++ (if cfg.llamaServer.alias or null == null then [ ] else [ "--alias" cfg.llamaServer.alias ])
    ++ cfg.llamaServer.extraFlags;

  # --n-gpu-layers 999 asks a CPU build for layers it cannot offload (it
  # accepts it without a word): given only to a build with a GPU backend. A
  # cfg without a package (lib.nix's own callers) keeps the fixed flags.
  withoutGpuLayersOnCpu = cfg: flags:
    let
      pkg = cfg.llamaServer.package or null;
      drop = i: builtins.elemAt flags i == "--n-gpu-layers" || (i > 0 && builtins.elemAt flags (i - 1) == "--n-gpu-layers");
      n = builtins.length flags;
    in
    if pkg == null || gpuBackends pkg != [ ] then flags
    else builtins.map (i: builtins.elemAt flags i) (builtins.filter (i: !(drop i)) (builtins.genList (i: i) n));

  # The keys of the generated config files that an option writes: `option`
  # its path under services.boxmaker, null where the module derives the key
  # from several (sockets, the slot map, what the contract says of the slots).
  # The same key under settings.<daemon> is a second spelling of one fact.
  optionKeys = [
    { daemon = "loopd"; key = [ "socket" ]; option = null; }
    { daemon = "loopd"; key = [ "state_dir" ]; option = null; }
    { daemon = "loopd"; key = [ "inferproxy_socket" ]; option = null; }
    { daemon = "loopd"; key = [ "brokerd_socket" ]; option = null; }
    { daemon = "loopd"; key = [ "slots" ]; option = null; }
    { daemon = "loopd"; key = [ "max_tokens" ]; option = [ "maxTokens" ]; }
    { daemon = "loopd"; key = [ "budgets" "max_iterations" ]; option = [ "budgets" "maxIterations" ]; }
    { daemon = "loopd"; key = [ "budgets" "max_total_tokens" ]; option = [ "budgets" "maxTotalTokens" ]; }
    { daemon = "loopd"; key = [ "budgets" "max_wall_ms" ]; option = [ "budgets" "maxWallMs" ]; }
    { daemon = "loopd"; key = [ "budgets" "max_thinking_tokens" ]; option = [ "budgets" "maxThinkingTokens" ]; }
    { daemon = "loopd"; key = [ "schedules" ]; option = [ "schedules" ]; }
    { daemon = "loopd"; key = [ "log_level" ]; option = [ "logLevel" ]; }
    { daemon = "inferproxy"; key = [ "socket" ]; option = null; }
    { daemon = "inferproxy"; key = [ "upstream" ]; option = [ "upstream" ]; }
    { daemon = "inferproxy"; key = [ "sampling" "temperature" ]; option = [ "sampling" "temperature" ]; }
    { daemon = "inferproxy"; key = [ "sampling" "top_p" ]; option = [ "sampling" "topP" ]; }
    { daemon = "inferproxy"; key = [ "sampling" "top_k" ]; option = [ "sampling" "topK" ]; }
    { daemon = "inferproxy"; key = [ "sampling" "min_p" ]; option = [ "sampling" "minP" ]; }
    { daemon = "inferproxy"; key = [ "contract" "template_sha256" ]; option = [ "contract" "templateSha256" ]; }
    { daemon = "inferproxy"; key = [ "contract" "n_ctx_per_slot" ]; option = null; }
    { daemon = "inferproxy"; key = [ "contract" "total_slots" ]; option = null; }
    { daemon = "inferproxy"; key = [ "contracts" ]; option = [ "contracts" ]; }
    { daemon = "inferproxy"; key = [ "liveness_timeout_ms" ]; option = [ "livenessWindowMs" ]; }
    { daemon = "inferproxy"; key = [ "log_level" ]; option = [ "logLevel" ]; }
    { daemon = "brokerd"; key = [ "socket" ]; option = null; }
    { daemon = "brokerd"; key = [ "state_dir" ]; option = null; }
    { daemon = "brokerd"; key = [ "workspace_roots" ]; option = [ "workspaceRoots" ]; }
    { daemon = "brokerd"; key = [ "policy" "defaults" ]; option = [ "policy" "defaults" ]; }
    { daemon = "brokerd"; key = [ "policy" "rules" ]; option = [ "policy" "rules" ]; }
    { daemon = "brokerd"; key = [ "sandbox" "mode" ]; option = [ "sandbox" "enable" ]; }
    { daemon = "brokerd"; key = [ "sandbox" "network" ]; option = [ "sandbox" "network" ]; }
    { daemon = "brokerd"; key = [ "sandbox" "net_proxy" "enabled" ]; option = [ "sandbox" "netProxy" "enable" ]; }
    { daemon = "brokerd"; key = [ "mcp_servers" ]; option = [ "mcpServers" ]; }
    { daemon = "brokerd"; key = [ "log_level" ]; option = [ "logLevel" ]; }
    { daemon = "loopd"; key = [ "session_logs" "compress_archived_after_days" ]; option = [ "retention" "archivedLogDays" ]; }
    { daemon = "loopd"; key = [ "session_logs" "compress_idle_after_days" ]; option = [ "retention" "idleLogDays" ]; }
    { daemon = "brokerd"; key = [ "checkpoints" "keep_days" ]; option = [ "retention" "checkpointDays" ]; }
    { daemon = "brokerd"; key = [ "checkpoints" "keep_sessions" ]; option = [ "retention" "checkpointSessions" ]; }
    { daemon = "brokerd"; key = [ "proposals" "keep_decided_days" ]; option = [ "retention" "decidedProposalDays" ]; }
    { daemon = "brokerd"; key = [ "proposals" "keep_decided_max" ]; option = [ "retention" "decidedProposalMax" ]; }
  ];

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

  # The retention options set, as brokerd's keys; one left null is brokerd's default.
  brokerdRetention = r:
    let
      nonEmpty = name: attrs: if attrs == { } then { } else { ${name} = attrs; };
    in
    nonEmpty "checkpoints" (withoutNulls { keep_days = r.checkpointDays or null; keep_sessions = r.checkpointSessions or null; })
    // nonEmpty "proposals" (withoutNulls { keep_decided_days = r.decidedProposalDays or null; keep_decided_max = r.decidedProposalMax or null; });

  brokerdConfig = { cfg, bwrapPath, socatPath }: merge ({
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
  } // brokerdRetention (cfg.retention or { })) cfg.settings.brokerd;

  loopdConfig = cfg: merge ({
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
  } // (
    let
      r = cfg.retention or { };
      logs = withoutNulls { compress_archived_after_days = r.archivedLogDays or null; compress_idle_after_days = r.idleLogDays or null; };
    in
    if logs == { } then { } else { session_logs = logs; }
  )) cfg.settings.loopd;
}
