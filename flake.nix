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
    # Python, etcd, kubernetes, go
    nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.05";
    # kapack's NUR package set: Batsim and SimGrid (prebuilt on the capack cachix cache). Not made to
    # follow our nixpkgs, so that its binaries match the cache. Pinned to a commit (its batsim is 4.2.0,
    # so batsimFor below builds the v4.2.1 tag with kapack's recipe).
    kapack.url = "github:oar-team/nur-kapack/cef1d6ed5841e8c2390a236ccc01c0332e90d7f7";
    # Batsim's 4.2.1 tag, used only if kapack's batsim is another version (built with kapack's recipe)
    batsim-src = {
      url = "git+https://framagit.org/batsim/batsim?ref=refs/tags/v4.2.1";
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
