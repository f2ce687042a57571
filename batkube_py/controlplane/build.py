"""Build (once) and locate the pinned, unmodified control-plane binaries.

The project cannot download release tarballs, only Go modules: so ``gobuild/kube`` is a tiny module that
requires ``k8s.io/kubernetes`` with replace directives for its staging modules (the way
kubernetes-sigs/scheduler-plugins builds against it) and ``gobuild/etcd`` one that requires etcd's server
module. Their ``main`` packages only call the upstream commands. The module cache, the build cache and
the binaries live outside the repository, keyed by the pinned versions, so a second build is a no-op and
CI can cache one directory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

KUBE_VERSION = "v1.32.6"
ETCD_VERSION = "v3.5.21"
GOBUILD = Path(__file__).with_name("gobuild")
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler")
_MAIN = {
    "etcd": ("etcd", "."),
    "kube-apiserver": ("kube", "./cmd/kube-apiserver"),
    "kube-scheduler": ("kube", "./cmd/kube-scheduler"),
}


class BuildError(RuntimeError):
    pass


def cache_dir() -> Path:
    return Path(os.environ.get("BATKUBE_CACHE") or Path.home() / ".cache" / "batkube-py")


def _sources_key() -> str:
    """Changing a pin or a main package gives a new binary directory, never a stale binary."""
    h = hashlib.sha256()
    for f in sorted(GOBUILD.rglob("*")):
        if f.is_file() and f.suffix in (".mod", ".sum", ".go"):
            h.update(f.relative_to(GOBUILD).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:10]


def bin_dir() -> Path:
    return cache_dir() / "bin" / f"k8s-{KUBE_VERSION}-etcd-{ETCD_VERSION}-{_sources_key()}"


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path


def find_binaries() -> Binaries | None:
    """The cached pinned build if it is complete, else all three from PATH (e.g. a nix shell), else None."""
    d = (
        Path(os.environ["BATKUBE_CONTROLPLANE_BIN"])
        if "BATKUBE_CONTROLPLANE_BIN" in os.environ
        else bin_dir()
    )
    if all((d / b).is_file() for b in BINARIES):
        return Binaries(d / "etcd", d / "kube-apiserver", d / "kube-scheduler")
    found = [shutil.which(b) for b in BINARIES]
    if all(found):
        return Binaries(*(Path(p) for p in found))  # type: ignore[arg-type]
    return None


def sources() -> Path:
    """A writable copy of the Go modules under the cache: `go build -mod=mod` may rewrite go.sum, and an
    installed package (a wheel in a system site-packages) can be read-only. Keyed like the binaries."""
    dst = cache_dir() / "src" / _sources_key()
    if not (dst / "kube" / "go.mod").is_file():
        if not (GOBUILD / "kube" / "go.mod").is_file():
            raise BuildError(f"the control plane's Go sources are not in {GOBUILD}: reinstall batkube-py")
        tmp = dst.with_name(f"{dst.name}.tmp{os.getpid()}")
        shutil.copytree(GOBUILD, tmp, dirs_exist_ok=True)
        shutil.rmtree(dst, ignore_errors=True)
        os.replace(tmp, dst)
    return dst


def _ldflags(binary: str) -> str:
    if binary == "etcd":
        return "-s -w"
    major, minor, _ = KUBE_VERSION[1:].split(".")
    pkgs = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    parts = ["-s -w"]
    for p in pkgs:
        parts += [
            f"-X {p}.gitVersion={KUBE_VERSION}",
            f"-X {p}.gitMajor={major}",
            f"-X {p}.gitMinor={minor}",
            f"-X {p}.gitTreeState=clean",
            f"-X {p}.buildDate=1970-01-01T00:00:00Z",
        ]
    return " ".join(parts)


def build(log=sys.stderr, attempts: int = 3) -> Binaries:
    """Build what is missing; retries because a module download can fail transiently."""
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            "`go` is not on PATH: install Go >= 1.23 (e.g. apt-get install golang-go) to build "
            "the control plane, or put etcd, kube-apiserver and kube-scheduler on PATH"
        )
    out = bin_dir()
    out.mkdir(parents=True, exist_ok=True)
    src = sources()
    env = dict(os.environ)
    env.setdefault("GOMODCACHE", str(cache_dir() / "go" / "mod"))
    env.setdefault("GOCACHE", str(cache_dir() / "go" / "build"))
    env.update(GOFLAGS="-mod=mod -trimpath", CGO_ENABLED="0", GOTOOLCHAIN="local")
    for binary in BINARIES:
        target = out / binary
        if target.is_file():
            continue
        module, pkg = _MAIN[binary]
        cmd = [go, "build", "-o", str(target) + ".tmp", "-ldflags", _ldflags(binary), pkg]
        for attempt in range(1, attempts + 1):
            t0 = time.monotonic()
            print(f"building {binary} ({' '.join(cmd[1:3])}) attempt {attempt}", file=log, flush=True)
            proc = subprocess.run(cmd, cwd=src / module, env=env, capture_output=True, text=True)
            if proc.returncode == 0:
                os.replace(str(target) + ".tmp", target)
                print(f"built {binary} in {time.monotonic() - t0:.0f} s", file=log, flush=True)
                break
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            if attempt == attempts:
                raise BuildError(f"go build of {binary} failed {attempts} times; last error:\n{tail}")
            print(f"go build of {binary} failed, retrying:\n{tail}", file=log, flush=True)
            time.sleep(5 * attempt)
    found = find_binaries()
    assert found is not None
    return found
