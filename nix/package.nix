# The Boxmaker package: the workspaces built with `tsc -b` (npm run build),
# installed to $out/lib/boxmaker with the repository layout the CLI expects
# (services/<daemon>/dist next to services/cli/dist), plus bin/ wrappers.
#
# npmDepsHash: the hash of the npm dependencies fetched from package-lock.json.
# It cannot be computed without network access to the npm registry, so it is
# a placeholder here. After any change to package-lock.json run
#   nix build .#default
# and copy the `got: sha256-…` value from the hash-mismatch error into
# npmDepsHash (or use `prefetch-npm-deps package-lock.json`).
{
  lib,
  buildNpmPackage,
  nodejs_20,
  makeWrapper,
  bubblewrap,
  systemd,
}:

buildNpmPackage {
  pname = "boxmaker";
  version = (builtins.fromJSON (builtins.readFile ../package.json)).version;

  src = lib.fileset.toSource {
    root = ../.;
    fileset = lib.fileset.unions [
      ../package.json
      ../package-lock.json
      ../tsconfig.json
      ../tsconfig.base.json
      ../proto
      ../services
      ../test/llama-sim
      ../docs
      ../deploy
    ];
  };

  nodejs = nodejs_20;
  npmDepsHash = lib.fakeHash;

  nativeBuildInputs = [ makeWrapper ];

  # The generated protobuf code is committed (services/common/src/gen), so the
  # build needs no buf/protoc: `npm run build` is only `tsc -b`.
  npmBuildScript = "build";

  installPhase = ''
    runHook preInstall
    npm prune --omit=dev --no-save
    mkdir -p $out/lib/boxmaker $out/bin
    cp -r package.json node_modules services test deploy docs $out/lib/boxmaker/
    # Sources and test files are not needed at run time.
    find $out/lib/boxmaker/services $out/lib/boxmaker/test -name src -type d -prune -exec rm -rf {} +

    # systemd-notify (READY=1) and bwrap (the tool sandbox) on PATH.
    wrap() {
      makeWrapper ${lib.getExe nodejs_20} $out/bin/$1 \
        --add-flags $out/lib/boxmaker/$2 \
        --suffix PATH : ${lib.makeBinPath [ systemd bubblewrap ]}
    }
    wrap boxmaker services/cli/dist/bundle/boxmaker.js
    wrap boxmaker-inferproxy services/inferproxy/dist/main.js
    wrap boxmaker-brokerd services/brokerd/dist/main.js
    wrap boxmaker-loopd services/loopd/dist/main.js
    wrap boxmaker-llama-sim test/llama-sim/dist/main.js
    runHook postInstall
  '';

  meta = {
    description = "A local-model agent harness in front of a dedicated llama.cpp llama-server";
    mainProgram = "boxmaker";
    platforms = lib.platforms.linux;
  };
}
