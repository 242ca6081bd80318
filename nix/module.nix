# NixOS module: services.boxmaker. Generates the same units as the plain ones
# in deploy/systemd (see their comments for the reasons behind each setting)
# and the daemons' JSON config files. Usage, from a flake:
#
#   imports = [ boxmaker.nixosModules.default ];
#   services.boxmaker = {
#     enable = true;
#     llamaServer.model = "/var/lib/models/ornith-1.5-35b-a3b-Q4_K_M.gguf";
#     workspaceRoots = [ "/home/alice/src" ];
#   };
{ config, lib, pkgs, ... }:

let
  cfg = config.services.boxmaker;
  boxLib = import ./lib.nix;
  inherit (lib) mkOption mkEnableOption mkPackageOption mkIf types literalExpression;

  json = name: value: pkgs.writeText "boxmaker-${name}.json" (builtins.toJSON value);
  configFiles = {
    inferproxy = json "inferproxy" (boxLib.inferproxyConfig cfg);
    brokerd = json "brokerd" (boxLib.brokerdConfig { inherit cfg; bwrapPath = "${pkgs.bubblewrap}/bin/bwrap"; });
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

  daemon = name: description: extra: {
    inherit description documentation;
    wantedBy = [ "boxmaker.target" ];
    partOf = [ "boxmaker.target" ];
    startLimitIntervalSec = 300;
    startLimitBurst = 5;
    environment.NODE_ENV = "production";
    # The daemons run systemd-notify (a child process) for READY=1; NixOS puts
    # systemd on every unit's PATH.
    serviceConfig = common // {
      Type = "notify";
      NotifyAccess = "all";
      ExecStart = "${lib.getExe' cfg.package "boxmaker-${name}"} --config ${configFiles.${name}}";
      # Exit status 2 is a config error: restarting cannot fix it.
      RestartPreventExitStatus = 2;
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
      package = mkPackageOption pkgs "llama-cpp" { extraDescription = "Build it with your GPU's backend, e.g. `pkgs.llama-cpp.override { cudaSupport = true; }`."; };
      model = mkOption {
        type = types.nullOr (types.either types.path types.str);
        default = null;
        example = "/var/lib/models/ornith-1.5-35b-a3b-Q4_K_M.gguf";
        description = "The GGUF model file, an absolute path (one outside the store avoids copying tens of GB into it). Required when `llamaServer.enable`.";
      };
      extraFlags = mkOption {
        type = types.listOf types.str;
        default = [ ];
        example = [ "--threads" "16" ];
        description = "Extra llama-server flags, after the contract flags.";
      };
      gpuGroups = mkOption {
        type = types.listOf types.str;
        default = [ "video" "render" ];
        example = [ "video" "render" "nvidia" ];
        description = "Supplementary groups of llama-server, for the GPU device nodes (`/dev/dri`, `/dev/kfd`, `/dev/nvidia*`).";
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

    slots = mkOption { type = types.ints.positive; default = boxLib.defaults.llamaContract.slots; description = "llama-server slots (`--parallel`): main session, subagent, scheduled work."; };
    contextSize = mkOption {
      type = types.ints.positive;
      default = boxLib.defaults.llamaContract.contextSize;
      description = "llama-server `--ctx-size`, split evenly over the slots (131,072 tokens each by default).";
    };
    contract.templateSha256 = mkOption {
      type = types.strMatching "[0-9a-f]{64}";
      default = boxLib.defaults.llamaContract.templateSha256;
      description = "sha256 of the model's chat template; inferproxy refuses to serve a server whose template differs.";
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
      maxThinkingTokens = mkOption { type = types.ints.unsigned; default = boxLib.defaults.budgets.max_thinking_tokens; description = "Reasoning tokens per model request before thinking is ended."; };
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

  config = mkIf cfg.enable {
    assertions = [
      { assertion = cfg.contextSize / cfg.slots * cfg.slots == cfg.contextSize; message = "services.boxmaker.contextSize must divide evenly by slots."; }
      { assertion = cfg.llamaServer.enable -> cfg.upstream.url == null; message = "services.boxmaker.upstream.url is for an external server: set llamaServer.enable = false."; }
      {
        assertion = cfg.llamaServer.enable -> (cfg.llamaServer.model != null && lib.hasPrefix "/" (toString cfg.llamaServer.model));
        message = "services.boxmaker.llamaServer.model must be the absolute path of a GGUF file (or set llamaServer.enable = false and point upstream at your server).";
      }
      { assertion = cfg.upstream.url == null || builtins.match "https?://[^/]+(/.*)?" cfg.upstream.url != null; message = "services.boxmaker.upstream.url must start with http:// or https://."; }
      { assertion = lib.hasPrefix "/" cfg.upstream.socket; message = "services.boxmaker.upstream.socket must be an absolute path."; }
    ];

    users.users = mkIf (cfg.user == "boxmaker") {
      boxmaker = { isSystemUser = true; group = cfg.group; home = boxLib.stateDir; description = "Boxmaker agent harness"; };
    };
    users.groups = mkIf (cfg.group == "boxmaker") { boxmaker = { }; };

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

    systemd.services.boxmaker-llama-server = mkIf cfg.llamaServer.enable {
      description = "Boxmaker llama-server (dedicated, ${boxLib.sockets.llama})";
      inherit documentation;
      wantedBy = [ "boxmaker.target" ];
      partOf = [ "boxmaker.target" ];
      startLimitIntervalSec = 900;
      startLimitBurst = 3;
      path = [ pkgs.curl ];
      serviceConfig = common // {
        # Not sd_notify-aware: Type=exec plus ExecStartPost polling /health.
        Type = "exec";
        SupplementaryGroups = cfg.llamaServer.gpuGroups;
        StateDirectory = "boxmaker/slots";
        StateDirectoryMode = "0750";
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
        ProtectHome = "read-only";
        PrivateNetwork = true;
        RestrictAddressFamilies = [ "AF_UNIX" "AF_NETLINK" ];
        RestrictNamespaces = true;
      };
    };

    systemd.services.boxmaker-inferproxy = daemon "inferproxy" "Boxmaker inferproxy (gRPC in front of llama-server)" (
      {
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
      after = [ "boxmaker-llama-server.service" ];
    };

    systemd.services.boxmaker-brokerd = daemon "brokerd" "Boxmaker brokerd (tools, policy, sandbox)" {
      StateDirectory = "boxmaker/broker";
      StateDirectoryMode = "0750";
      TimeoutStartSec = "2min";
      ProtectHome = "read-only";
      ReadWritePaths = cfg.workspaceRoots;
      # bubblewrap creates namespaces and configures the sandbox's loopback over netlink.
      RestrictAddressFamilies = [ "AF_UNIX" "AF_INET" "AF_INET6" "AF_NETLINK" ];
    };

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
      after = [ "boxmaker-inferproxy.service" "boxmaker-brokerd.service" ];
    };
  };
}
