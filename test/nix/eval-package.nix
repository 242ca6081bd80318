# Evaluates nix/package.nix with stand-ins for nixpkgs' builders, so
# test/nix/package-eval.test.ts can check what it hands to buildNpmPackage and
# importNpmLock without a nixpkgs checkout or network. Building it needs
# neither stand-in: `nix build .#default`.
#
# lib.fileset needs builtins.readFileType (Nix >= 2.14); with an older
# nix-instantiate (Debian's 2.8) `src` is a stand-in path. NIXPKGS_LIB as in
# eval-module.nix.
let
  libFromEnv = builtins.getEnv "NIXPKGS_LIB";
  realLib =
    if libFromEnv == "" then import ../fixtures/nixpkgs-lib/lib
    else if libFromEnv == "<nixpkgs/lib>" then import <nixpkgs/lib>
    else import (/. + libFromEnv);
  lib = if builtins ? readFileType then realLib else realLib // {
    fileset = realLib.fileset // { toSource = _: "/nix/store/00000000000000000000000000000000-source"; };
  };
  drv = name: { type = "derivation"; inherit name; outPath = "/nix/store/00000000000000000000000000000000-${name}"; meta.mainProgram = "node"; };
  importNpmLock = {
    __functor = _: args: { importNpmLockArgs = args; };
    npmConfigHook = "importNpmLock.npmConfigHook";
  };
  pkg = import ../../nix/package.nix {
    inherit lib importNpmLock;
    buildNpmPackage = args: args;
    nodejs_24 = drv "nodejs-24";
    makeWrapper = drv "makeWrapper";
    bubblewrap = drv "bubblewrap";
    systemd = drv "systemd";
  };
in
{
  inherit (pkg) pname version npmConfigHook npmBuildScript preBuild installPhase;
  nodejs = pkg.nodejs.name;
  hasNpmDepsHash = pkg ? npmDepsHash;
  srcIsStub = !(builtins ? readFileType);
  importNpmLock = {
    npmRoot = "${pkg.npmDeps.importNpmLockArgs.npmRoot}";
    src = "${pkg.src}";
    package = pkg.npmDeps.importNpmLockArgs.package;
    packageLock = pkg.npmDeps.importNpmLockArgs.packageLock;
  };
}
