{
  # batkube-py with Batsim 4.2.1, etcd and the Kubernetes binaries:
  #   nix develop          a shell with batsim, etcd, kube-apiserver, kube-scheduler, go and Python 3.11,
  #                        batkube-py installed (editable) in .venv
  #   nix run .#burst      the thesis's burst experiment (experiments/burst.yaml); extra args go to
  #                        `batkube experiment run`, e.g. `nix run .#burst -- --variant embedded`
  #   nix run .#batsim -- --version
  # What is pinned: see docs/nix.md (flake.lock records the exact revisions of the inputs below).
  description = "batkube-py: Kubernetes scheduling on Batsim-simulated clusters";

  inputs = {
    # Every input is a fixed revision (docs/nix.md says how each was checked); `nix flake lock` then
    # only adds their hashes.
    # Python, etcd, kubernetes, go: the nixpkgs revision that nur-kapack's own flake.lock records at the
    # commit below, so Batsim, SimGrid and the tools come from one package set.
    nixpkgs.url = "github:NixOS/nixpkgs/9be32fbfaab592ccc39eb2f299e42aafddc26b37";
    # kapack's NUR package set at the last commit that still packages batsim-420 (Batsim 4.2.0 on SimGrid
    # 3.34): the parent of 9e0efa7 "commenting out simgrid and batsim (#38)". batsimFor below builds
    # the v4.2.1 tag with that recipe.
    kapack = {
      url = "github:oar-team/nur-kapack/018ce0c1872fa66b30aa054ae649b4fca6d6d64a";
      inputs.nixpkgs.follows = "nixpkgs";
    };
    # Batsim's v4.2.1 tag (the commit it points to, on Batsim's GitHub mirror)
    batsim-src = {
      url = "github:oar-team/batsim/b5463dba818d6e8109e1bfd218d51c720fbdb30f";
      flake = false;
    };
  };

  outputs = { self, nixpkgs, kapack, batsim-src }:
    let
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: nixpkgs.lib.genAttrs systems (system: f system nixpkgs.legacyPackages.${system});

      batsimFor = system:
        let upstream = kapack.packages.${system}.batsim;
        in if upstream.version == "4.2.1" then upstream
           else upstream.overrideAttrs (_: { version = "4.2.1"; src = batsim-src; });

      # The experiment runner needs batkube-py; outside `nix develop` it lives in a cached venv.
      runExperiment = pkgs: system: name: pkgs.writeShellApplication {
        name = "batkube-${name}";
        # stdenv.cc: pip compiles the scheduler's Cython loops (without it the slower numpy code runs)
        runtimeInputs = [ (batsimFor system) pkgs.python311 pkgs.stdenv.cc pkgs.etcd_3_5 pkgs.kubernetes ];
        text = ''
          venv="''${XDG_CACHE_HOME:-$HOME/.cache}/batkube-py/nix-venv"
          if [ ! -x "$venv/bin/batkube" ]; then
            python3.11 -m venv "$venv"
            "$venv/bin/pip" install -q "${self}[distributed]"
          fi
          file=experiments/${name}.yaml
          [ -f "$file" ] || file=${self}/experiments/${name}.yaml
          exec "$venv/bin/batkube" experiment run "$file" "$@"
        '';
      };
    in {
      packages = forAllSystems (system: pkgs: {
        batsim = batsimFor system;
        default = batsimFor system;
      });

      apps = forAllSystems (system: pkgs: {
        batsim = { type = "app"; program = "${batsimFor system}/bin/batsim"; };
        burst = { type = "app"; program = "${runExperiment pkgs system "burst"}/bin/batkube-burst"; };
        spaced = { type = "app"; program = "${runExperiment pkgs system "spaced"}/bin/batkube-spaced"; };
        kit = { type = "app"; program = "${runExperiment pkgs system "kit"}/bin/batkube-kit"; };
        table41 = { type = "app"; program = "${runExperiment pkgs system "table41"}/bin/batkube-table41"; };
      });

      devShells = forAllSystems (system: pkgs: {
        default = pkgs.mkShell {
          packages = [
            (batsimFor system)
            pkgs.python311
            pkgs.python311Packages.venvShellHook
            pkgs.etcd_3_5
            pkgs.kubernetes
            pkgs.go
            pkgs.openssl
          ];
          venvDir = ".venv";
          postVenvCreation = ''
            pip install -q -e '.[test,distributed]'
          '';
          postShellHook = ''
            echo "batsim $(batsim --version)"
          '';
        };
      });
    };
}
