"""Build (once) and locate Kueue's controller: batkube's own main (gobuild/kueue-vX.Y.Z, docs/kueue.md) over
the unmodified sigs.k8s.io/kueue packages from the Go module proxy, and the CRDs of that release.

Like the control plane's binaries (build.py), the build lives outside the repository, keyed by the release
and the sources of its main, so a second build is a no-op; the CRDs are copied next to the binary from
the module cache (they are Kueue's own files, read at run time, never part of batkube-py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from batkube_py.controlplane.build import GOBUILD, BuildError, cache_dir, go_build

DEFAULT_KUEUE_VERSION = "v0.17.0"
SUPPORTED = ("v0.17.0",)


@dataclass(frozen=True)
class KueueBinary:
    path: Path
    crds: Path  # the release's CRD bases (one YAML file per kind)
    version: str


def kueue_version(version: str | None = None) -> str:
    """`--kueue-version`, else $BATKUBE_KUEUE_VERSION, else the default, as "vX.Y.Z"."""
    v = version or os.environ.get("BATKUBE_KUEUE_VERSION") or DEFAULT_KUEUE_VERSION
    v = v if v.startswith("v") else f"v{v}"
    if v not in SUPPORTED:
        raise BuildError(f"Kueue {v} is not one batkube builds; supported: {', '.join(SUPPORTED)}")
    return v


def _module(version: str) -> Path:
    return GOBUILD / f"kueue-{version}"


def _sources_key(version: str) -> str:
    h = hashlib.sha256()
    root = _module(version)
    for f in sorted(root.rglob("*")):
        if f.is_file() and f.suffix in (".mod", ".sum", ".go"):
            h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:10]


def bin_dir(version: str | None = None) -> Path:
    v = kueue_version(version)
    return cache_dir() / "bin" / f"kueue-{v}-{_sources_key(v)}"


def find_kueue(version: str | None = None) -> KueueBinary | None:
    """The cached build of that release if complete ($BATKUBE_KUEUE_BIN names another binary, whose
    CRDs are then expected in a `crds` folder beside it)."""
    v = kueue_version(version)
    exe = Path(os.environ["BATKUBE_KUEUE_BIN"]) if "BATKUBE_KUEUE_BIN" in os.environ else bin_dir(v) / "kueue"
    crds = exe.parent / "crds"
    if exe.is_file() and any(crds.glob("*.yaml")):
        return KueueBinary(exe, crds, v)
    return None


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("GOMODCACHE", str(cache_dir() / "go" / "mod"))
    env.setdefault("GOCACHE", str(cache_dir() / "go" / "build"))
    env.update(GOFLAGS="-mod=mod -trimpath", CGO_ENABLED="0", GOTOOLCHAIN="local")
    return env


def build_kueue(log=sys.stderr, attempts: int = 3, version: str | None = None) -> KueueBinary:
    """Build what is missing; retries because a module download can fail transiently."""
    v = kueue_version(version)
    if found := find_kueue(v):
        return found
    go = shutil.which("go")
    if go is None:
        raise BuildError("`go` is not on PATH: install Go >= 1.26 to build Kueue's controller")
    out = bin_dir(v)
    out.mkdir(parents=True, exist_ok=True)
    src = cache_dir() / "src" / f"kueue-{v}-{out.name.rsplit('-', 1)[1]}"
    if not (src / "go.mod").is_file():
        shutil.copytree(_module(v), src, dirs_exist_ok=True)
    env = _go_env()
    go_build(go, f"kueue {v}", out / "kueue", "./cmd/kueue", "-s -w", src, env, log, attempts)
    listed = subprocess.run([go, "list", "-m", "-json", "sigs.k8s.io/kueue"], cwd=src, env=env,
                            capture_output=True, text=True, check=False)  # fmt: skip
    try:
        module_dir = Path(json.loads(listed.stdout)["Dir"])
    except (ValueError, KeyError):
        raise BuildError(
            f"cannot locate sigs.k8s.io/kueue in the module cache: {listed.stderr.strip()}"
        ) from None
    bases = module_dir / "config" / "components" / "crd" / "bases"
    (out / "crds").mkdir(exist_ok=True)
    for f in sorted(bases.glob("*.yaml")):
        shutil.copyfile(f, out / "crds" / f.name)
    found = find_kueue(v)
    if found is None:
        raise BuildError(f"Kueue's CRDs were not found in {bases}")
    return found
