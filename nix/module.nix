# NixOS module: services.boxmaker. Generates the same units as the plain ones
# in deploy/systemd (see their comments for the reasons behind each setting)
# and the daemons' JSON config files. Usage, from a flake:
#
#   imports = [ boxmaker.nixosModules.default ];
#   services.boxmaker = {
#     enable = true;
#     llamaServer.package = pkgs.llama-cpp.override { vulkanSupport = true; };
#     llamaServer.model = "/var/lib/models/ornith-1.5-35b-a3b-Q4_K_M.gguf";
#     slots = 2;                # main, and subagents + scheduled work on slot 1
#     contextPerSlot = 131072;
#     kvCacheType = "q8_0";
#     workspaceRoots = [ "/home/alice/src" ];
#   };
{ config, lib, pkgs, options, ... }:

let
  cfg = config.services.boxmaker;
  boxLib = import ./lib.nix;
  inherit (lib) mkOption mkEnableOption mkIf types literalExpression;

  json = name: value: boxLib.checkedConfigFile {
    inherit (pkgs) writeText runCommand;
    exe = lib.getExe' cfg.package "boxmaker-${name}";
    inherit name value;
  };
  configFiles = {
    inferproxy = json "inferproxy" (boxLib.inferproxyConfig cfg);
    brokerd = json "brokerd" (boxLib.brokerdConfig { inherit cfg; bwrapPath = "${pkgs.bubblewrap}/bin/bwrap"; socatPath = "${pkgs.socat}/bin/socat"; });
    loopd = json "loopd" (boxLib.loopdConfig cfg);
  };

  # What every Boxmaker service shares: the user, the runtime dir the sockets
  # live in, and the hardening baseline.
  common = {
    User = cfg.user;
    Group = cfg.group;
    RuntimeDirectory = "boxmaker";
    RuntimeDirectoryMode = "0750";
    # Four units share /run/boxmaker; one stopping must not delete the others' sockets.
    RuntimeDirectoryPreserve = true;
    UMask = "0007";
    Restart = "on-failure";
    NoNewPrivileges = true;
    ProtectSystem = "strict";
    PrivateTmp = true;
    ProtectKernelTunables = true;
    ProtectKernelModules = true;
    ProtectKernelLogs = true;
    ProtectControlGroups = true;
    ProtectClock = true;
    ProtectHostname = true;
    RestrictRealtime = true;
    RestrictSUIDSGID = true;
    LockPersonality = true;
    CapabilityBoundingSet = "";
    SystemCallArchitectures = "native";
  };

  documentation = [ "file:${cfg.package}/lib/boxmaker/docs/operations.md" ];

  # The GPU backends of the llama.cpp build, and the device nodes each needs
  # (systemd's DeviceAllow= classes): with any DeviceAllow= the unit sees only
  # those and the standard pseudo-devices; a CPU build sees no devices at all.
  backends = boxLib.gpuBackends cfg.llamaServer.package;
  backendDevices = {
    vulkanSupport = [ "char-drm rw" ];
    rocmSupport = [ "char-drm rw" "char-kfd rw" ];
    cudaSupport = [ "char-nvidiactl rw" "char-nvidia-frontend rw" "char-nvidia-uvm rw" "char-nvidia-caps rw" ];
  };
  deviceAllow = lib.unique (lib.concatMap (b: backendDevices.${b}) backends);

  # The key the contract table goes by for the served model (common/src/contract-model.ts).
  modelKey = if cfg.llamaServer.alias != null then cfg.llamaServer.alias else baseNameOf (toString cfg.llamaServer.model);
  templateSha256FromFile = boxLib.templateFileSha256 cfg.llamaServer.chatTemplateFile;

  plan = if cfg.llamaServer.modelFacts == null then null else boxLib.memoryPlan {
    facts = cfg.llamaServer.modelFacts;
    inherit (cfg) slots contextPerSlot kvCacheType computeMarginMiB;
  };
  budgetBytes = if cfg.memoryBudgetMiB == null then null else cfg.memoryBudgetMiB * 1024 * 1024;

  # An option defined in the configuration, not left at its default (mkOptionDefault's priority, 1500).
  isSet = path: (lib.attrByPath path { highestPrio = 1500; } options.services.boxmaker).highestPrio < 1500;
  secondSpellings = lib.concatMap (k:
    let
      key = lib.concatStringsSep "." k.key;
      inSettings = lib.hasAttrByPath k.key cfg.settings.${k.daemon};
    in
    if !inSettings then [ ]
    else if k.option == null then [ "services.boxmaker.settings.${k.daemon}.${key} is derived by the module from its options (slots, slotMap, contextPerSlot, the sockets and state directories): set those instead." ]
    else if isSet k.option then [ "services.boxmaker.${lib.concatStringsSep "." k.option} and services.boxmaker.settings.${k.daemon}.${key} both set ${k.daemon}'s `${key}`: keep one." ]
    else [ ]) boxLib.optionKeys;

  # After the target as well as PartOf it: the target's stop job then waits
  # for every service's (deploy/systemd/boxmaker.target explains).
  stackUnit = {
    inherit documentation;
    wantedBy = [ "boxmaker.target" ];
    partOf = [ "boxmaker.target" ];
    after = [ "boxmaker.target" ];
  };

  # Failures a restart cannot fix: 2 a bad config, 203/216/217 systemd's own
  # set-up (no binary, a missing group or user); they fail once instead of
  # using up the start limit.
  setupFailures = "203 216 217";

  daemon = name: description: extra: stackUnit // {
    inherit description;
    startLimitIntervalSec = 300;
    startLimitBurst = 5;
    environment.NODE_ENV = "production";
    # The daemons run systemd-notify (a child process) for READY=1; NixOS puts
    # systemd on every unit's PATH.
    serviceConfig = common // {
      Type = "notify";
      NotifyAccess = "all";
      ExecStart = "${lib.getExe' cfg.package "boxmaker-${name}"} --config ${configFiles.${name}}";
      RestartPreventExitStatus = "2 ${setupFailures}";
      RestartSec = 2;
      TimeoutStopSec = 30;
      PrivateDevices = true;
    } // extra;
  };

  policyRule = types.submodule {
    options = {
      name = mkOption { type = types.nullOr types.str; default = null; description = "Shown in the audit trail; defaults to `rule[i]`."; };
      tool = mkOption { type = types.str; description = "Tool name or glob over tool names (`*`, `github.*`)."; };
      effect = mkOption { type = types.enum [ "allow" "ask" "deny" ]; description = "What the rule decides."; };
      paths = mkOption { type = types.nullOr (types.listOf types.str); default = null; description = "Globs over workspace-relative (or absolute) paths."; };
      commandPrefixes = mkOption { type = types.nullOr (types.listOf types.str); default = null; description = "Command prefixes for run_command, whole words (`git status`)."; };
      hosts = mkOption { type = types.nullOr (types.listOf types.str); default = null; description = "URL hosts for tools whose arguments carry a `url`."; };
    };
  };

  mcpServer = types.submodule {
    options = {
      transport = mkOption { type = types.enum [ "stdio" "http" ]; description = "How brokerd talks to the server."; };
      command = mkOption { type = types.nullOr types.str; default = null; description = "The server's executable (stdio)."; };
      args = mkOption { type = types.listOf types.str; default = [ ]; description = "Its arguments (stdio)."; };
      env = mkOption { type = types.attrsOf types.str; default = { }; description = "Extra environment (stdio)."; };
      cwd = mkOption { type = types.nullOr types.str; default = null; description = "Working directory (stdio)."; };
      url = mkOption { type = types.nullOr types.str; default = null; description = "The server's URL (http)."; };
      headers = mkOption { type = types.attrsOf types.str; default = { }; description = "HTTP headers (http). They end up in the Nix store: no secrets."; };
      risk = mkOption { type = types.enum [ "read" "write" "exec" "network" ]; default = "write"; description = "How policy treats every tool of this server."; };
      timeoutMs = mkOption { type = types.ints.positive; default = 30000; description = "Per-call and connect timeout."; };
    };
  };
in
{
  options.services.boxmaker = {
    enable = mkEnableOption "Boxmaker, a local-model agent harness (llama-server, inferproxy, brokerd, loopd)";

    package = mkOption {
      type = types.package;
      default = pkgs.callPackage ./package.nix { };
      defaultText = literalExpression "pkgs.callPackage ./nix/package.nix { }";
      description = "The Boxmaker package (daemons and the `boxmaker` CLI).";
    };

    user = mkOption { type = types.str; default = "boxmaker"; description = "User all Boxmaker services run as."; };
    toolsUser = mkOption {
      type = types.nullOr types.str;
      default = null;
      example = "alice";
      description = ''
        The account brokerd (and so every tool and sandboxed command) acts as; null: `user`.
        On a one-person workstation set it to your own account: files the agent creates or
        overwrites are then yours, as if you had edited them (the sandbox still confines the model).
        On a shared machine keep the dedicated account and make the workspaces group-writable
        for `group`.
      '';
    };
    group = mkOption {
      type = types.str;
      default = "boxmaker";
      description = "Group of the services and their sockets; people in it can use the `boxmaker` CLI.";
    };

    llamaServer = {
      enable = mkOption {
        type = types.bool;
        default = true;
        description = "Run Boxmaker's dedicated llama-server. Disable to use `upstream` instead.";
      };
      package = mkOption {
        # No default: nixpkgs' plain llama-cpp is a CPU build, and llama-server
        # accepts --n-gpu-layers 999 there without a word, so a default would
        # run a 35B model on the CPU until someone noticed.
        type = types.nullOr types.package;
        default = null;
        example = literalExpression "pkgs.llama-cpp.override { vulkanSupport = true; }";
        description = ''
          The llama.cpp build that provides `llama-server`, with your GPU's backend. Required
          while `llamaServer.enable`:
          Vulkan `pkgs.llama-cpp.override { vulkanSupport = true; }`,
          CUDA `pkgs.llama-cpp.override { cudaSupport = true; }`,
          ROCm `pkgs.llama-cpp.override { rocmSupport = true; }`,
          or `pkgs.llama-cpp` for the CPU on purpose.
        '';
      };
      model = mkOption {
        type = types.nullOr (types.either types.path types.str);
        default = null;
        example = "/var/lib/models/ornith-1.5-35b-a3b-Q4_K_M.gguf";
        description = "The GGUF model file, an absolute path (one outside the store avoids copying tens of GB into it). Required when `llamaServer.enable`.";
      };
      chatTemplateFile = mkOption {
        type = types.nullOr (types.either types.path types.str);
        default = null;
        example = "/etc/boxmaker/chat-template.jinja";
        description = ''
          A chat template for llama-server (`--chat-template-file`) in place of the one in the model
          file: the corrected template `boxmaker doctor --write-template FILE` writes for a template
          that is not prefix-stable. Its sha256 is the new template_sha256: accept it in `contracts`
          (or `contract.templateSha256`) too.
        '';
      };
      modelFacts = mkOption {
        type = types.nullOr (types.submodule {
          options = {
            layers = mkOption { type = types.ints.positive; description = "The model's layers (`<arch>.block_count`)."; };
            kvHeads = mkOption { type = types.either types.ints.unsigned (types.listOf types.ints.unsigned); description = "KV heads, one number or one per layer (0 for a layer without attention)."; };
            headSizeK = mkOption { type = types.ints.positive; description = "K head size (`<arch>.attention.key_length`)."; };
            headSizeV = mkOption { type = types.ints.positive; description = "V head size (`<arch>.attention.value_length`)."; };
            weightsBytes = mkOption { type = types.ints.unsigned; description = "The file's tensor data, in bytes."; };
          };
        });
        default = null;
        description = ''
          What the memory plan needs of the model file, which evaluation cannot read (it is outside
          the store): paste what `boxmaker memory-plan MODEL.gguf --nix` prints. With it, a
          kvCacheType llama-server would refuse for this model is an evaluation error, and
          `memoryBudgetMiB` is checked.
        '';
      };
      alias = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "ornith-1.5-35b";
        description = "llama-server's `--alias`: the name the server reports for its model, and so the key of its entry in `contracts` (null: the model file's name).";
      };
      environment = mkOption {
        type = types.attrsOf types.str;
        default = { };
        example = { GGML_VK_VISIBLE_DEVICES = "0"; CUDA_VISIBLE_DEVICES = "0"; };
        description = "Environment of llama-server, e.g. which GPU it uses (`GGML_VK_VISIBLE_DEVICES`, `CUDA_VISIBLE_DEVICES`, `HIP_VISIBLE_DEVICES`). A `LLAMA_ARG_*` variable for a setting the module makes is an evaluation error.";
      };
      extraFlags = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "--threads" "16" ];
        description = "Extra llama-server flags, after the ones the module derives from its options (slots, contextPerSlot, kvCacheType, chatTemplateFile, alias, the package's GPU backend) and the fixed ones session pinning and parking rely on. A flag for any of those (under any of llama.cpp's names for it) is an evaluation error: set the option instead.";
      };
      gpuGroups = mkOption {
        type = types.listOf types.str;
        default = [ "video" "render" ];
        example = [ "video" "render" "nvidia" ];
        description = "Supplementary groups of llama-server, for the GPU device nodes (`/dev/dri`, `/dev/kfd`, `/dev/nvidia*`). The module declares each one, so a group no other module defines cannot fail the unit with 216/GROUP.";
      };
    };

    upstream = {
      socket = mkOption {
        type = types.str;
        default = boxLib.sockets.llama;
        description = "llama-server's Unix socket as inferproxy reaches it.";
      };
      url = mkOption {
        type = types.nullOr types.str;
        default = null;
        example = "http://127.0.0.1:8080";
        description = "A TCP llama-server instead of the socket (development); opens inferproxy's network sandbox.";
      };
    };

    slots = mkOption {
      # unsigned, not positive, so 0 reaches the assertion that says why.
      type = types.ints.unsigned;
      default = boxLib.defaults.llamaContract.slots;
      example = 2;
      description = ''
        llama-server slots (`--parallel`), inferproxy's expected `total_slots`, and loopd's slot
        map (`slotMap`): 3 gives main 0, subagent 1, scheduled 2; 2 gives main 0 and subagents
        and scheduled work sharing slot 1; 1 runs everything on slot 0.
      '';
    };
    slotMap = lib.genAttrs [ "main" "subagent" "scheduled" ] (role: mkOption {
      type = types.ints.unsigned;
      default = (boxLib.slotMapFor cfg.slots).${role};
      defaultText = literalExpression "derived from slots";
      description = "The llama-server slot loopd runs ${role} sessions on; must be below `slots`.";
    });
    contextPerSlot = mkOption {
      type = types.ints.positive;
      default = boxLib.defaults.llamaContract.nCtxPerSlot;
      example = 131072;
      description = "Tokens of context per slot: llama-server gets `--ctx-size` slots × contextPerSlot (each slot its own share, `--no-kv-unified`), and inferproxy expects `n_ctx_per_slot` = contextPerSlot.";
    };
    kvCacheType = mkOption {
      type = types.enum (builtins.attrNames boxLib.defaults.kvCacheTypes);
      default = boxLib.defaults.kvCacheType;
      description = "llama-server's KV cache type (`--cache-type-k` and `--cache-type-v`). q8_0 needs half the memory of f16 for the same context; quantized V needs flash attention, which the unit turns on.";
    };
    memoryBudgetMiB = mkOption {
      type = types.nullOr types.ints.positive;
      default = null;
      example = 106496;
      description = ''
        The memory llama-server may use, in MiB (the GPU's, or what a unified-memory machine leaves
        it beside everything else resident). With `llamaServer.modelFacts` the module computes the
        plan (weights + KV cache for slots × contextPerSlot of kvCacheType + computeMarginMiB) and
        warns at evaluation when it does not fit, saying by how much and what one slot costs.
      '';
    };
    computeMarginMiB = mkOption {
      type = types.ints.unsigned;
      default = 2048;
      description = "Room the memory plan leaves for llama-server's compute buffers, which the backend sizes at load (llama-server logs them as `compute buffer size`).";
    };
    livenessWindowMs = mkOption {
      type = types.nullOr types.ints.positive;
      default = null;
      defaultText = literalExpression "null (inferproxy's own default)";
      example = 15000;
      description = "inferproxy's `liveness_timeout_ms`: how long a completion may show no progress before it is ended as dead. null leaves inferproxy's default.";
    };
    contract.templateSha256 = mkOption {
      type = types.strMatching "[0-9a-f]{64}";
      default = if templateSha256FromFile != null then templateSha256FromFile else boxLib.defaults.llamaContract.templateSha256;
      defaultText = literalExpression "the sha256 of llamaServer.chatTemplateFile when it is a Nix path, else the recorded model's";
      description = "sha256 of the model's chat template; inferproxy refuses to serve a server whose template differs. For a model with no `contracts` entry. Follows `llamaServer.chatTemplateFile` when that is a path Nix can read (in the store or the flake).";
    };
    contracts = mkOption {
      type = types.listOf (types.submodule {
        options = {
          model = mkOption { type = types.str; example = "ornith-1.5-35b-a3b-Q4_K_M.gguf"; description = "The model's key: llama-server's --alias if given, else the model file's name (`boxmaker contract show` prints it)."; };
          templateSha256 = mkOption { type = types.strMatching "[0-9a-f]{64}"; description = "sha256 of the chat template the server renders for this model."; };
          nCtxPerSlot = mkOption { type = types.ints.positive; default = cfg.contextPerSlot; defaultText = literalExpression "contextPerSlot"; description = "n_ctx_per_slot the server reports for this model."; };
          totalSlots = mkOption { type = types.ints.positive; default = cfg.slots; defaultText = literalExpression "slots"; description = "total_slots the server reports for this model."; };
          probeVerdict = mkOption { type = types.enum [ "ok" "warn" "" ]; default = ""; description = "What the template probe said when the entry was accepted, for the record."; };
        };
      });
      default = [ ];
      example = literalExpression ''[ { model = "laguna-s-2.1-Q4_K_M.gguf"; templateSha256 = "…"; probeVerdict = "ok"; } ]'';
      description = "The contract table: one entry per model the operator runs (what `boxmaker contract accept` would write), so a swap to any of them is served without editing the contract.";
    };

    sampling = {
      temperature = mkOption { type = types.numbers.nonnegative; default = boxLib.defaults.sampling.temperature; description = "Sampling temperature sent with every request."; };
      topP = mkOption { type = types.numbers.between 0 1; default = boxLib.defaults.sampling.top_p; description = "top_p sent with every request."; };
      topK = mkOption { type = types.ints.unsigned; default = boxLib.defaults.sampling.top_k; description = "top_k sent with every request."; };
      minP = mkOption { type = types.numbers.between 0 1; default = boxLib.defaults.sampling.min_p; description = "min_p sent with every request."; };
    };

    maxTokens = mkOption { type = types.ints.positive; default = boxLib.defaults.maxTokensPerRequest; description = "max_tokens of each model request loopd makes."; };
    budgets = {
      maxIterations = mkOption { type = types.ints.unsigned; default = boxLib.defaults.budgets.max_iterations; description = "Model requests per turn."; };
      maxTotalTokens = mkOption { type = types.ints.unsigned; default = boxLib.defaults.budgets.max_total_tokens; description = "Tokens per turn."; };
      maxWallMs = mkOption { type = types.ints.unsigned; default = boxLib.defaults.budgets.max_wall_ms; description = "Wall-clock time per turn, in ms."; };
      maxThinkingTokens = mkOption { type = types.ints.unsigned; default = boxLib.defaults.budgets.max_thinking_tokens; description = "Reasoning tokens per turn before thinking is ended: once a turn has thought this much, each further request of the turn gets a thinking cap of 1."; };
    };

    # What the stores a retention bounds keep (docs/operations.md, "Disk upkeep"); null leaves the
    # daemon's own default, which `boxmaker status` shows beside each store's size.
    retention = {
      checkpointDays = mkOption {
        type = types.nullOr types.ints.unsigned;
        default = null;
        defaultText = literalExpression "null (brokerd's default, 30)";
        description = "brokerd's `checkpoints.keep_days`: a session whose last change is older than this many days loses its checkpoints (`boxmaker undo` can no longer restore them). 0 keeps any age.";
      };
      checkpointSessions = mkOption {
        type = types.nullOr types.ints.unsigned;
        default = null;
        defaultText = literalExpression "null (brokerd's default, 1000)";
        description = "brokerd's `checkpoints.keep_sessions`: the checkpoints of at most this many sessions stay, the most recently changed. 0 keeps any number.";
      };
      decidedProposalDays = mkOption {
        type = types.nullOr types.ints.unsigned;
        default = null;
        defaultText = literalExpression "null (brokerd's default, 30)";
        description = "brokerd's `proposals.keep_decided_days`: a decided proposal is deleted this many days after its decision (pending ones always stay). 0 keeps any age.";
      };
      archivedLogDays = mkOption {
        type = types.nullOr types.ints.unsigned;
        default = null;
        defaultText = literalExpression "null (loopd's default, 30)";
        description = "loopd's `session_logs.compress_archived_after_days`: an archived session's log is compressed (gzip, never deleted; read back when the session is shown) this many days after its last record. 0 never compresses.";
      };
      idleLogDays = mkOption {
        type = types.nullOr types.ints.unsigned;
        default = null;
        defaultText = literalExpression "null (loopd's default, 90)";
        description = "loopd's `session_logs.compress_idle_after_days`: any session's log is compressed this many days after its last record (read back plain when the session is used again). 0 never compresses.";
      };
      decidedProposalMax = mkOption {
        type = types.nullOr types.ints.unsigned;
        default = null;
        defaultText = literalExpression "null (brokerd's default, 10000)";
        description = "brokerd's `proposals.keep_decided_max`: at most this many decided proposals stay, the newest. 0 keeps any number.";
      };
    };

    workspaceRoots = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [ "/home/alice/src" ];
      description = "Directories tools may work in; brokerd may write only there. The `boxmaker` user needs Unix permissions on them.";
    };
    policy = {
      defaults = mkOption {
        type = types.attrsOf (types.enum [ "allow" "ask" "deny" ]);
        default = { read = "allow"; write = "ask"; exec = "ask"; network = "ask"; };
        description = "Effect per risk (read, write, exec, network) when no rule matches.";
      };
      rules = mkOption { type = types.listOf policyRule; default = [ ]; description = "Operator rules, in order."; };
    };
    sandbox = {
      enable = mkOption { type = types.bool; default = true; description = "Run commands in bubblewrap. Disabling runs them unsandboxed."; };
      network = mkOption { type = types.bool; default = false; description = "Give sandboxed commands the network."; };
      netProxy.enable = mkOption {
        type = types.bool;
        default = false;
        description = "Let sandboxed commands reach the hosts policy rules allow (`hosts`), through brokerd's HTTP CONNECT and SOCKS5 proxy; the sandbox keeps no network of its own. Further keys (allow_private_hosts, addresses, limits) under `settings.brokerd.sandbox.net_proxy`.";
      };
    };
    mcpServers = mkOption { type = types.attrsOf mcpServer; default = { }; description = "MCP servers whose tools brokerd offers (through find_tool/call_tool)."; };
    schedules = mkOption {
      type = types.listOf (types.submodule {
        options = {
          id = mkOption { type = types.str; description = "Stable name of the schedule."; };
          cron = mkOption { type = types.str; example = "0 7 * * 1-5"; description = "Cron expression."; };
          prompt = mkOption { type = types.str; description = "The task to run."; };
        };
      });
      default = [ ];
      description = "Tasks loopd runs on the scheduled slot.";
    };

    logLevel = mkOption { type = types.enum [ "fatal" "error" "warn" "info" "debug" "trace" "silent" ]; default = "info"; description = "The daemons' log level."; };
    settings = mkOption {
      type = types.submodule {
        options = lib.genAttrs [ "inferproxy" "brokerd" "loopd" ] (name: mkOption {
          type = (pkgs.formats.json { }).type;
          default = { };
          description = "Further ${name} config keys (services/${name}/src/config.ts), merged over the generated file.";
        });
      };
      default = { };
      description = "Escape hatch for config keys without an option here.";
    };
  };

  imports = [
    (lib.mkRemovedOptionModule [ "services" "boxmaker" "contextSize" ] "Set services.boxmaker.contextPerSlot instead; llama-server's --ctx-size is slots × contextPerSlot.")
  ];

  config = mkIf cfg.enable {
    assertions = [
      { assertion = cfg.slots >= 1; message = "services.boxmaker.slots must be at least 1: loopd needs a slot for the main session."; }
      {
        assertion = cfg.llamaServer.enable -> cfg.llamaServer.package != null;
        message = "services.boxmaker.llamaServer.package must be chosen: a llama.cpp build with your GPU's backend, e.g. pkgs.llama-cpp.override { vulkanSupport = true; } (or cudaSupport, rocmSupport; pkgs.llama-cpp for the CPU).";
      }
      { assertion = cfg.llamaServer.enable -> cfg.upstream.url == null; message = "services.boxmaker.upstream.url is for an external server: set llamaServer.enable = false."; }
      {
        assertion = cfg.llamaServer.enable -> (cfg.llamaServer.model != null && lib.hasPrefix "/" (toString cfg.llamaServer.model));
        message = "services.boxmaker.llamaServer.model must be the absolute path of a GGUF file (or set llamaServer.enable = false and point upstream at your server).";
      }
      { assertion = cfg.upstream.url == null || builtins.match "https?://[^/]+(/.*)?" cfg.upstream.url != null; message = "services.boxmaker.upstream.url must start with http:// or https://."; }
      { assertion = lib.hasPrefix "/" cfg.upstream.socket; message = "services.boxmaker.upstream.socket must be an absolute path."; }
      {
        assertion = !(cfg.llamaServer.enable && cfg.llamaServer.chatTemplateFile != null && templateSha256FromFile == null
          && !(isSet [ "contract" "templateSha256" ]) && !(lib.any (c: c.model == modelKey) cfg.contracts));
        message = "services.boxmaker.llamaServer.chatTemplateFile ${toString cfg.llamaServer.chatTemplateFile} is outside the Nix store, so its sha256 cannot be computed here and inferproxy would refuse every completion against the recorded template's: give the file as a Nix path (./chat-template.jinja), or name its sha256 in contract.templateSha256 or a contracts entry for model \"${modelKey}\" (`boxmaker contract show` prints both).";
      }
      {
        assertion = plan == null || plan.refusal == null;
        message = "services.boxmaker: ${if plan == null || plan.refusal == null then "" else plan.refusal} (llama.cpp checks this at load): choose another kvCacheType.";
      }
    ] ++ map (message: { assertion = false; inherit message; }) (boxLib.llamaSettingClashes cfg ++ secondSpellings)
    ++ map (role: {
      assertion = cfg.slotMap.${role} < cfg.slots;
      message = "services.boxmaker.slotMap.${role} is slot ${toString cfg.slotMap.${role}}, but llama-server has ${toString cfg.slots} slot(s) (0..${toString (cfg.slots - 1)}).";
    }) [ "main" "subagent" "scheduled" ];

    warnings = let
      used = lib.sort lib.lessThan (lib.unique (lib.attrValues cfg.slotMap));
      idle = lib.filter (i: !(lib.elem i used)) (lib.range 0 (cfg.slots - 1));
    in lib.optional (cfg.slots >= 1 && idle != [ ])
      "services.boxmaker.slots = ${toString cfg.slots}, but slotMap uses only slot(s) ${lib.concatMapStringsSep ", " toString used}: slot(s) ${lib.concatMapStringsSep ", " toString idle} hold KV memory no session uses."
    ++ lib.optional (cfg.llamaServer.enable && boxLib.sleepsWhenIdle cfg)
      "services.boxmaker.llamaServer sets --sleep-idle-seconds: llama-server then unloads the model after that long idle, and every slot's cache with it, so each session re-reads its whole prompt after a pause (parking already frees the slots without losing their caches). Remove it unless the GPU must be free when idle."
    ++ lib.optional (plan != null && budgetBytes != null && plan.totalBytes > budgetBytes)
      "services.boxmaker: llama-server needs ${boxLib.gib plan.totalBytes} (weights ${boxLib.gib cfg.llamaServer.modelFacts.weightsBytes} + KV cache ${boxLib.gib plan.kvBytes} for ${toString cfg.slots} × ${toString plan.cellsPerSlot} tokens of ${cfg.kvCacheType} + compute margin ${boxLib.gib plan.computeBytes}), ${boxLib.gib (plan.totalBytes - budgetBytes)} over memoryBudgetMiB (${boxLib.gib budgetBytes}); each slot's context costs ${boxLib.gib (plan.kvBytes / cfg.slots)}: fewer slots, a smaller contextPerSlot or kvCacheType."
    ++ lib.optional (plan == null && cfg.memoryBudgetMiB != null && cfg.llamaServer.enable)
      "services.boxmaker.memoryBudgetMiB is set but llamaServer.modelFacts is not, so nothing is checked against it: add what `boxmaker memory-plan MODEL.gguf --nix` prints."
    ++ lib.optional (cfg.llamaServer.enable && cfg.llamaServer.package != null && backends == [ ])
      "services.boxmaker.llamaServer.package has no GPU backend (no vulkanSupport, cudaSupport or rocmSupport): llama-server runs the model on the CPU.";

    users.users = mkIf (cfg.user == "boxmaker") {
      boxmaker = { isSystemUser = true; group = cfg.group; home = boxLib.stateDir; description = "Boxmaker agent harness"; };
    };
    users.groups = lib.mkMerge [
      (mkIf (cfg.group == "boxmaker") { boxmaker = { }; })
      # Declared here so they exist however the rest of the system is set up
      # (NixOS defines video and render itself; this merges with that).
      (mkIf cfg.llamaServer.enable (lib.genAttrs cfg.llamaServer.gpuGroups (_: { })))
    ];

    environment.systemPackages = [ cfg.package ];
    # The CLI's default socket is /run/boxmaker/loopd.sock already; this makes it explicit for scripts.
    environment.variables.BOXMAKER_SOCKET = boxLib.sockets.loopd;

    systemd.targets.boxmaker = {
      description = "Boxmaker agent harness (llama-server, inferproxy, brokerd, loopd)";
      inherit documentation;
      wantedBy = [ "multi-user.target" ];
      wants = lib.optional cfg.llamaServer.enable "boxmaker-llama-server.service"
        ++ [ "boxmaker-inferproxy.service" "boxmaker-brokerd.service" "boxmaker-loopd.service" ];
    };

    systemd.services.boxmaker-llama-server = mkIf cfg.llamaServer.enable (stackUnit // {
      description = "Boxmaker llama-server (dedicated, ${boxLib.sockets.llama})";
      startLimitIntervalSec = 900;
      startLimitBurst = 3;
      path = [ pkgs.curl ];
      # Mesa's and the drivers' shader caches under the unit's CacheDirectory: ProtectSystem=strict leaves no
      # other writable place, and without one every start compiles every shader again.
      environment = { XDG_CACHE_HOME = "/var/cache/boxmaker/llama-server"; } // cfg.llamaServer.environment;
      serviceConfig = common // {
        # Not sd_notify-aware: Type=exec plus ExecStartPost polling /health.
        Type = "exec";
        SupplementaryGroups = cfg.llamaServer.gpuGroups;
        StateDirectory = "boxmaker/slots";
        StateDirectoryMode = "0750";
        CacheDirectory = "boxmaker/llama-server";
        CacheDirectoryMode = "0750";
        # It leaves its socket behind and refuses to bind while it exists.
        ExecStartPre = "-${pkgs.coreutils}/bin/rm -f ${boxLib.sockets.llama}";
        ExecStart = lib.escapeShellArgs ([ (lib.getExe' cfg.llamaServer.package "llama-server") ] ++ boxLib.llamaServerArgs cfg);
        ExecStartPost = pkgs.writeShellScript "boxmaker-llama-server-ready" ''
          until curl -sf -o /dev/null --unix-socket ${boxLib.sockets.llama} http://llama/health; do
            kill -0 "$MAINPID" 2>/dev/null || exit 1
            sleep 1
          done
        '';
        ExecStopPost = "-${pkgs.coreutils}/bin/rm -f ${boxLib.sockets.llama}";
        TimeoutStartSec = "15min";
        TimeoutStopSec = 60;
        RestartSec = 10;
        RestartPreventExitStatus = setupFailures;
        ProtectHome = "read-only";
        PrivateNetwork = true;
        RestrictAddressFamilies = [ "AF_UNIX" "AF_NETLINK" ];
        RestrictNamespaces = true;
      } // (if deviceAllow == [ ] then { PrivateDevices = true; } else { DeviceAllow = deviceAllow; });
    });

    systemd.services.boxmaker-inferproxy = daemon "inferproxy" "Boxmaker inferproxy (gRPC in front of llama-server)" (
      {
        # Parked session caches: llama-server writes them, inferproxy erases them and caps the directory.
        StateDirectory = "boxmaker/slots";
        StateDirectoryMode = "0750";
        TimeoutStartSec = "15min";
        ProtectHome = true;
        ProtectProc = "invisible";
        RestrictNamespaces = true;
      }
      // (if cfg.upstream.url == null
        then { PrivateNetwork = true; RestrictAddressFamilies = [ "AF_UNIX" ]; }
        else { RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" ]; })
    ) // lib.optionalAttrs cfg.llamaServer.enable {
      wants = [ "boxmaker-llama-server.service" ];
      after = [ "boxmaker-llama-server.service" "boxmaker.target" ];
    };

    systemd.services.boxmaker-brokerd = daemon "brokerd" "Boxmaker brokerd (tools, policy, sandbox)" ({
      StateDirectory = "boxmaker/broker";
      StateDirectoryMode = "0750";
      TimeoutStartSec = "2min";
      ProtectHome = "read-only";
      ReadWritePaths = cfg.workspaceRoots;
      # bubblewrap creates namespaces and configures the sandbox's loopback over netlink.
      RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" "AF_NETLINK" ];
    } // lib.optionalAttrs (cfg.toolsUser != null) {
      # The operator's own account: its socket still belongs to the group every daemon shares, and
      # what it creates gets the operator's usual 0644 (the stack's 0007 would hide it from others).
      User = cfg.toolsUser;
      SupplementaryGroups = [ cfg.group ];
      UMask = "0022";
    });

    systemd.services.boxmaker-loopd = daemon "loopd" "Boxmaker loopd (sessions and the agent loop)" {
      StateDirectory = "boxmaker/loopd";
      StateDirectoryMode = "0750";
      TimeoutStartSec = "2min";
      ProtectHome = true;
      ProtectProc = "invisible";
      RestrictNamespaces = true;
      PrivateNetwork = true;
      RestrictAddressFamilies = [ "AF_UNIX" ];
    } // {
      wants = [ "boxmaker-inferproxy.service" "boxmaker-brokerd.service" ];
      after = [ "boxmaker-inferproxy.service" "boxmaker-brokerd.service" "boxmaker.target" ];
    };
  };
}
