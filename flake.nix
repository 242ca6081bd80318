{
  description = "Boxmaker: a local-model agent harness in front of a dedicated llama.cpp llama-server";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      # `nix build .#default`: nix/package.nix (Node 24; npm dependencies from
      # package-lock.json through importNpmLock, no hash to update).
      packages = forAllSystems (pkgs: {
        default = pkgs.callPackage ./nix/package.nix { };
      });

      # `nix develop`: the Node the package builds and runs with.
      devShells = forAllSystems (pkgs: {
        default = pkgs.mkShell { packages = [ pkgs.nodejs_24 ]; };
      });

      # The module builds its default package from this same tree
      # (nix/package.nix), so importing it is all a system needs.
      nixosModules.default = import ./nix/module.nix;
      nixosModules.boxmaker = self.nixosModules.default;
    };
}
