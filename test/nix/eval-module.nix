# Evaluates nix/module.nix the way NixOS would, without NixOS: nixpkgs'
# lib.evalModules over the module plus typed stand-ins for the NixOS options it
# sets, with a minimal `pkgs`. Used by test/nix/module-eval.test.ts:
#
#   nix-instantiate --eval --strict --json test/nix/eval-module.nix \
#     --argstr boxmakerJSON '{"enable": true, "llamaServer": {"model": "/m.gguf"}}'
#
# `boxmakerJSON` is the value of `services.boxmaker`, as JSON. JSON cannot
# hold a package, so `llamaServer.package` is written as the expression it
# stands for: "llama-cpp" is pkgs.llama-cpp, {"llama-cpp": {"vulkanSupport":
# true}} is pkgs.llama-cpp.override { vulkanSupport = true; }. The result is
# the evaluated systemd units, users, environment and warnings. Failed
# assertions stop the evaluation with NixOS's own error text ("Failed
# assertions:" and each message), as `nixos-rebuild` would.
#
# nixpkgs' lib comes from the copy in test/fixtures/nixpkgs-lib (so a clone of
# this repository needs nothing else); NIXPKGS_LIB=/path/to/nixpkgs/lib uses
# another one, NIXPKGS_LIB='<nixpkgs/lib>' the one on NIX_PATH.
{ boxmakerJSON ? "{}" }:

let
  libFromEnv = builtins.getEnv "NIXPKGS_LIB";
  lib =
    if libFromEnv == "" then import ../fixtures/nixpkgs-lib/lib
    else if libFromEnv == "<nixpkgs/lib>" then import <nixpkgs/lib>
    else import (/. + libFromEnv);
  inherit (lib) mkOption types;

  # A derivation-shaped stand-in: what the module interpolates is outPath. The
  # hash part is derived from the name (and the text, for files), so paths are
  # stable across runs and a changed file gets a different path.
  fakeDrv = { name, text ? null, mainProgram ? null }:
    let hash = builtins.substring 0 32 (builtins.hashString "sha256" "${name}\n${toString text}");
    in {
      type = "derivation";
      inherit name;
      outPath = "/nix/store/${hash}-${name}";
      meta = lib.optionalAttrs (mainProgram != null) { inherit mainProgram; };
    } // lib.optionalAttrs (text != null) { inherit text; };

  boxmakerPackage = fakeDrv { name = "boxmaker-0.1.0"; mainProgram = "boxmaker"; };

  pkgs = {
    # The module's default package is `pkgs.callPackage ./package.nix { }`;
    # building it is nix/package.nix's business, not this evaluation's.
    callPackage = fn: args:
      assert baseNameOf (toString fn) == "package.nix";
      boxmakerPackage;
    # nixpkgs' llama-cpp takes its GPU backend as an override argument; the
    # stand-in's name records which, so a test can see the choice reached ExecStart.
    llama-cpp = fakeDrv { name = "llama-cpp-0"; mainProgram = "llama-server"; } // {
      override = args:
        let
          known = [ "vulkanSupport" "cudaSupport" "rocmSupport" ];
          on = lib.filter (k: args.${k} or false) known;
        in
        assert lib.all (k: lib.elem k known) (lib.attrNames args);
        # nixpkgs' llama-cpp keeps its backend switches in passthru, which the module reads.
        fakeDrv { name = "llama-cpp-${lib.concatMapStringsSep "-" (lib.removeSuffix "Support") on}-0"; mainProgram = "llama-server"; }
        // { passthru = lib.genAttrs known (k: lib.elem k on); };
    };
    bubblewrap = fakeDrv { name = "bubblewrap-0"; mainProgram = "bwrap"; };
    socat = fakeDrv { name = "socat-0"; mainProgram = "socat"; };
    coreutils = fakeDrv { name = "coreutils-0"; };
    curl = fakeDrv { name = "curl-0"; mainProgram = "curl"; };
    writeText = name: text: fakeDrv { inherit name text; };
    # Its text is the build script, so a test can see what the build runs.
    runCommand = name: env: script: fakeDrv { inherit name; text = script; };
    writeShellScript = name: text: fakeDrv { inherit name text; };
    # nixpkgs' pkgs.formats.json type: any JSON value.
    formats.json = { }: {
      type = let
        valueType = types.nullOr (types.oneOf [
          types.bool types.int types.float types.str types.path
          (types.attrsOf valueType) (types.listOf valueType)
        ]) // { description = "JSON value"; };
      in valueType;
    };
  };

  # The NixOS options the module sets, typed as NixOS types them (reduced to
  # the attributes the module uses: an unknown one is an evaluation error, as
  # it would be on NixOS).
  unitOption = types.oneOf [ types.bool types.int types.str types.path types.package (types.listOf (types.oneOf [ types.str types.path types.package ])) ];
  unitCommon = {
    description = mkOption { type = types.str; default = ""; };
    documentation = mkOption { type = types.listOf types.str; default = [ ]; };
    wantedBy = mkOption { type = types.listOf types.str; default = [ ]; };
    requiredBy = mkOption { type = types.listOf types.str; default = [ ]; };
    wants = mkOption { type = types.listOf types.str; default = [ ]; };
    requires = mkOption { type = types.listOf types.str; default = [ ]; };
    after = mkOption { type = types.listOf types.str; default = [ ]; };
    before = mkOption { type = types.listOf types.str; default = [ ]; };
    partOf = mkOption { type = types.listOf types.str; default = [ ]; };
    bindsTo = mkOption { type = types.listOf types.str; default = [ ]; };
    unitConfig = mkOption { type = types.attrsOf unitOption; default = { }; };
    startLimitIntervalSec = mkOption { type = types.nullOr types.int; default = null; };
    startLimitBurst = mkOption { type = types.nullOr types.int; default = null; };
  };
  serviceType = types.submodule {
    options = unitCommon // {
      environment = mkOption { type = types.attrsOf (types.nullOr (types.oneOf [ types.str types.path types.package ])); default = { }; };
      path = mkOption { type = types.listOf (types.either types.package types.str); default = [ ]; };
      serviceConfig = mkOption { type = types.attrsOf unitOption; default = { }; };
    };
  };
  targetType = types.submodule { options = unitCommon; };

  nixosStubs = {
    options = {
      assertions = mkOption {
        type = types.listOf (types.submodule {
          options.assertion = mkOption { type = types.bool; };
          options.message = mkOption { type = types.str; };
        });
        default = [ ];
      };
      warnings = mkOption { type = types.listOf types.str; default = [ ]; };
      users.users = mkOption {
        type = types.attrsOf (types.submodule {
          options = {
            isSystemUser = mkOption { type = types.bool; default = false; };
            group = mkOption { type = types.str; default = ""; };
            home = mkOption { type = types.str; default = "/var/empty"; };
            description = mkOption { type = types.str; default = ""; };
            extraGroups = mkOption { type = types.listOf types.str; default = [ ]; };
          };
        });
        default = { };
      };
      users.groups = mkOption {
        type = types.attrsOf (types.submodule { options.gid = mkOption { type = types.nullOr types.int; default = null; }; });
        default = { };
      };
      environment.systemPackages = mkOption { type = types.listOf types.package; default = [ ]; };
      environment.variables = mkOption { type = types.attrsOf (types.either types.str (types.listOf types.str)); default = { }; };
      systemd.services = mkOption { type = types.attrsOf serviceType; default = { }; };
      systemd.targets = mkOption { type = types.attrsOf targetType; default = { }; };
    };
  };

  # A Nix path (a file in the store or the flake) cannot be JSON either:
  # {"nixPath": "test/…"} stands for that file of this repository as a path.
  withPaths = v:
    let t = v.llamaServer.chatTemplateFile or null; in
    if builtins.isAttrs t && t ? nixPath then lib.recursiveUpdate v { llamaServer.chatTemplateFile = ../.. + "/${t.nixPath}"; }
    else v;

  boxmakerValue =
    let
      v = withPaths (builtins.fromJSON boxmakerJSON);
      p = v.llamaServer.package or null;
      asPackage =
        if builtins.isString p then pkgs.${p}
        else lib.mapAttrsToList (name: args: pkgs.${name}.override args) p;
    in
    if p == null then v
    else lib.recursiveUpdate v { llamaServer.package = if builtins.isString p then asPackage else builtins.head asPackage; };

  evaluated = lib.evalModules {
    modules = [
      ../../nix/module.nix
      nixosStubs
      { config.services.boxmaker = boxmakerValue; }
    ];
    specialArgs = { inherit pkgs; };
  };
  config = evaluated.config;

  # As nixos/modules/system/activation/top-level.nix: every failed assertion's
  # message in one error.
  failed = map (a: a.message) (lib.filter (a: !a.assertion) config.assertions);
  checked =
    if failed != [ ] then throw "\nFailed assertions:\n${lib.concatStringsSep "\n" (map (m: "- ${m}") failed)}"
    else config;

  # Derivations become their store path; generated scripts and files also
  # carry their text, so the test can compare what they say.
  plain = v:
    if lib.isDerivation v then (if v ? text then { storePath = v.outPath; inherit (v) text; } else v.outPath)
    else if builtins.isList v then map plain v
    else if builtins.isAttrs v then lib.mapAttrs (_: plain) v
    else v;

  cfg = checked.services.boxmaker;
  boxLib = import ../../nix/lib.nix;
  # The config files as the module writes them (same function, same JSON,
  # hence the same stand-in store paths as in ExecStart): the JSON, and the
  # build step that checks it with the daemon's own --check-config.
  configFile = name: value:
    let f = boxLib.checkedConfigFile {
      inherit (pkgs) writeText runCommand;
      exe = "${boxmakerPackage.outPath}/bin/boxmaker-${name}";
      inherit name value;
    };
    in { storePath = f.outPath; text = builtins.toJSON value; build = f.text; unchecked = f.unchecked.outPath; };
in
{
  services = plain checked.systemd.services;
  targets = plain checked.systemd.targets;
  users = checked.users;
  environment = plain checked.environment;
  warnings = checked.warnings;
  package = boxmakerPackage.outPath;
  configFiles = lib.optionalAttrs cfg.enable (lib.mapAttrs configFile {
    inferproxy = boxLib.inferproxyConfig cfg;
    brokerd = boxLib.brokerdConfig { inherit cfg; bwrapPath = "${pkgs.bubblewrap}/bin/bwrap"; socatPath = "${pkgs.socat}/bin/socat"; };
    loopd = boxLib.loopdConfig cfg;
  });
}
