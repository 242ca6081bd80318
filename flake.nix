{
  description = "Boxmaker: a local-model agent harness in front of a dedicated llama.cpp llama-server";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});
    in
    {
      packages = forAllSystems (pkgs: {
        default = pkgs.callPackage ./nix/package.nix { };
      });

      # The module builds its default package from this same tree
      # (nix/package.nix), so importing it is all a system needs.
      nixosModules.default = import ./nix/module.nix;
      nixosModules.boxmaker = self.nixosModules.default;
    };
}
