# The Boxmaker package: the npm workspaces built with `npm run build` (tsc -b,
# then the CLI bundle), installed to $out/lib/boxmaker with the repository
# layout the CLI expects (services/<daemon>/dist next to services/cli/dist),
# plus bin/ wrappers. Build it with `nix build .#default`.
#
# Dependencies come from package-lock.json through nixpkgs' importNpmLock: one
# fixed-output fetch per locked package, checked against the lock's own
# `integrity` hash, so there is no npmDepsHash to keep up to date.
{
  lib,
  buildNpmPackage,
  importNpmLock,
  nodejs_24,
  makeWrapper,
  bubblewrap,
  systemd,
}:

let
  packageJSON = lib.importJSON ../package.json;
  daemonNodeFlags = lib.concatStringsSep " " (lib.importJSON ./stack-defaults.json).daemonNodeFlags;
  cliNodeFlags = lib.concatStringsSep " " (lib.importJSON ./stack-defaults.json).cliNodeFlags;
  packageLock = lib.importJSON ../package-lock.json;

  # Build outputs and installed modules of a checkout never enter the source
  # (a flake's source is git-tracked files only; a plain `nix-build` sees the
  # working tree).
  workspaceDirs = map (w: ../. + "/${w}") packageJSON.workspaces;
  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.difference
      (lib.fileset.unions [
        ../package.json
        ../package-lock.json
        ../tsconfig.json
        ../tsconfig.base.json
        ../proto
        ../services
        ../test/llama-sim
        ../docs
        ../deploy
      ])
      (lib.fileset.unions (lib.concatMap (d: [
        (lib.fileset.maybeMissing (d + "/dist"))
        (lib.fileset.maybeMissing (d + "/node_modules"))
      ]) workspaceDirs));
  };

  # package-lock.json records no `resolved` URLs, only versions and integrity
  # hashes (npm leaves registry URLs out when omit-lockfile-registry-resolved
  # is set, and npm itself then derives them). importNpmLock fetches only
  # entries that have a URL, so give each registry package its public
  # registry tarball URL, the same one npm would use.
  isInstalledPackage = path: lib.hasPrefix "node_modules/" path || lib.hasInfix "/node_modules/" path;
  registryUrl = path: module:
    let
      name = module.name or (lib.last (lib.splitString "node_modules/" path));
      base = lib.last (lib.splitString "/" name);
    in
    "https://registry.npmjs.org/${name}/-/${base}-${module.version}.tgz";
  lockWithUrls = packageLock // {
    packages = lib.mapAttrs
      (path: module:
        if isInstalledPackage path && !(module ? resolved) && !(module.link or false)
        then module // { resolved = registryUrl path module; }
        else module)
      packageLock.packages;
  };

  # npm workspaces. importNpmLock drops the lock's `link: true` and points each
  # workspace entry (node_modules/@boxmaker/*) at a copy of its sources in the
  # store, which would not contain what `tsc -b` builds here. Link them to the
  # workspaces in the build tree instead, as `npm ci` does: before the build,
  # and again after `npm prune`, which restores the lock's view.
  workspaceLinks = lib.filterAttrs (_: module: module.link or false) packageLock.packages;
  linkWorkspaces = lib.concatStrings (lib.mapAttrsToList
    (path: module: ''
      rm -rf ${lib.escapeShellArg path}
      mkdir -p "$(dirname ${lib.escapeShellArg path})"
      ln -sr ${lib.escapeShellArg module.resolved} ${lib.escapeShellArg path}
    '')
    workspaceLinks);
in
buildNpmPackage {
  pname = "boxmaker";
  inherit (packageJSON) version;
  inherit src;

  nodejs = nodejs_24;
  npmDeps = importNpmLock {
    npmRoot = src;
    package = packageJSON;
    packageLock = lockWithUrls;
  };
  npmConfigHook = importNpmLock.npmConfigHook;

  nativeBuildInputs = [ makeWrapper ];

  # The generated protobuf code is committed (services/common/src/gen), so the
  # build needs no buf/protoc: `npm run build` is `tsc -b` and the CLI bundle.
  npmBuildScript = "build";
  preBuild = linkWorkspaces;

  installPhase = ''
    runHook preInstall
    npm prune --omit=dev --no-save $npmFlags
    ${linkWorkspaces}
    # npmConfigHook swapped in package.json/package-lock.json whose
    # dependencies point into the store; ship the originals, and drop npm's
    # hidden lockfile (it holds the same store paths).
    cp .package.json.orig package.json
    rm -f node_modules/.package-lock.json

    mkdir -p $out/lib/boxmaker $out/bin
    cp -r package.json node_modules services test deploy docs $out/lib/boxmaker/
    # Sources and test files are not needed at run time.
    find $out/lib/boxmaker/services $out/lib/boxmaker/test -name src -type d -prune -exec rm -rf {} +

    # systemd-notify (READY=1) and bwrap (the tool sandbox) on PATH; the
    # daemons and the CLI get the stack's node flags for each (stack-defaults.json).
    wrap() {
      makeWrapper ${lib.getExe nodejs_24} $out/bin/$1 \
        --add-flags "$3 $out/lib/boxmaker/$2" \
        --suffix PATH : ${lib.makeBinPath [ systemd bubblewrap ]}
    }
    wrap boxmaker services/cli/dist/bundle/boxmaker.js "${cliNodeFlags}"
    wrap boxmaker-inferproxy services/inferproxy/dist/main.js "${daemonNodeFlags}"
    wrap boxmaker-brokerd services/brokerd/dist/main.js "${daemonNodeFlags}"
    wrap boxmaker-loopd services/loopd/dist/main.js "${daemonNodeFlags}"
    wrap boxmaker-llama-sim test/llama-sim/dist/main.js ""
    runHook postInstall
  '';

  meta = {
    description = "A local-model agent harness in front of a dedicated llama.cpp llama-server";
    mainProgram = "boxmaker";
    platforms = lib.platforms.linux;
  };
}
