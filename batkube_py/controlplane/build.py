"""Build (once) and locate the pinned, unmodified control-plane binaries.

The project cannot download release tarballs, only Go modules: so ``gobuild/kube-vX.Y.Z`` is a tiny
module that requires ``k8s.io/kubernetes`` with replace directives for its staging modules (the way
kubernetes-sigs/scheduler-plugins builds against it) and ``gobuild/etcd-vX.Y.Z`` one that requires etcd's
server module, one pair per supported Kubernetes release (etcd: the release that Kubernetes version is
tested with, from its build/dependencies.yaml). kube-apiserver's and etcd's ``main`` only call the
upstream commands; 1.37.2's kube-scheduler ``main`` is upstream's command too, unless it is started with
``--batkube-control-address`` (the simulated clock, docs/sync.md). The module cache, the build cache and
the binaries live outside the repository, keyed by version and sources, so a second build is a no-op and
CI can cache one directory; a binary whose own inputs (its module's pins, its main) did not change is
copied from the earlier key's directory rather than rebuilt.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Kubernetes release -> the etcd release it is tested with (kubernetes build/dependencies.yaml, "etcd")
ETCD_FOR = {"v1.37.2": "v3.7.0", "v1.32.6": "v3.5.21"}
DEFAULT_KUBE_VERSION = "v1.37.2"
GO_MIN = "1.26"  # the `go` line of the default release's modules (gobuild/*/go.mod); every text cites this
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


def kube_version(version: str | None = None) -> str:
    """The Kubernetes release asked for (`--kube-version`, else $BATKUBE_KUBE_VERSION, else the
    default), as "vX.Y.Z"; one line naming the supported releases for any other."""
    v = version or os.environ.get("BATKUBE_KUBE_VERSION") or DEFAULT_KUBE_VERSION
    v = v if v.startswith("v") else f"v{v}"
    if v not in ETCD_FOR:
        raise BuildError(
            f"Kubernetes {v} is not one batkube builds; supported: {', '.join(sorted(ETCD_FOR))}"
        )
    return v


def module_dirs(version: str) -> dict[str, str]:
    return {"kube": f"kube-{version}", "etcd": f"etcd-{ETCD_FOR[version]}"}


def _sources_key(version: str) -> str:
    """Changing a pin or a main package gives a new binary directory, never a stale binary."""
    h = hashlib.sha256()
    for d in module_dirs(version).values():
        for f in sorted((GOBUILD / d).rglob("*")):
            if f.is_file() and f.suffix in (".mod", ".sum", ".go"):
                h.update(f.relative_to(GOBUILD).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:10]


def _binary_key(root: Path, version: str, binary: str) -> str | None:
    """What one binary is built from under `root` (a copy of gobuild): its module's pins and its own
    main package; None if that copy is incomplete."""
    module, pkg = _MAIN[binary]
    d = root / module_dirs(version)[module]
    own = sorted((d / pkg).glob("*.go"))
    files = [d / "go.mod", d / "go.sum", *own]
    if not all(f.is_file() for f in files):
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _reuse(out: Path, version: str, binary: str) -> bool:
    """Copy `binary` from the build of another source key whose own inputs were the same (a change to
    kube-scheduler's main alone must not cost a kube-apiserver build); the sources of each key are kept
    under cache_dir()/src."""
    want = _binary_key(GOBUILD, version, binary)
    prefix = out.name.rsplit("-", 1)[0]
    for other in sorted((out.parent).glob(f"{prefix}-*")):
        src = cache_dir() / "src" / other.name.rsplit("-", 1)[1]
        if other == out or not (other / binary).is_file() or _binary_key(src, version, binary) != want:
            continue
        shutil.copy2(other / binary, out / f"{binary}.tmp")
        os.replace(out / f"{binary}.tmp", out / binary)
        return True
    return False


def bin_dir(version: str | None = None) -> Path:
    v = kube_version(version)
    return cache_dir() / "bin" / f"k8s-{v}-etcd-{ETCD_FOR[v]}-{_sources_key(v)}"


# Releases whose kube-scheduler main has the simulated-clock endpoint (--sync queue)
CLOCK_VERSIONS = ("v1.37.2",)


@dataclass(frozen=True)
class Binaries:
    etcd: Path
    kube_apiserver: Path
    kube_scheduler: Path
    clock: bool = False  # batkube's kube-scheduler main: --batkube-control-address (docs/sync.md)

    def version(self) -> str | None:
        """The Kubernetes release of these binaries ("v1.37.2"), from `kube-scheduler --version`."""
        return _version_of(self.kube_scheduler)


@functools.lru_cache(maxsize=8)
def _version_of(binary: Path) -> str | None:
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"v\d+\.\d+\.\d+", out)
    return m.group(0) if m else None


def find_binaries(version: str | None = None) -> Binaries | None:
    """The cached build of `version` (see kube_version) if it is complete, else all three from PATH
    (e.g. a nix shell), else None."""
    ours = "BATKUBE_CONTROLPLANE_BIN" not in os.environ
    d = bin_dir(version) if ours else Path(os.environ["BATKUBE_CONTROLPLANE_BIN"])
    if all((d / b).is_file() for b in BINARIES):
        clock = ours and kube_version(version) in CLOCK_VERSIONS
        return Binaries(d / "etcd", d / "kube-apiserver", d / "kube-scheduler", clock)
    found = [shutil.which(b) for b in BINARIES]
    if all(found):
        return Binaries(*(Path(p) for p in found))  # type: ignore[arg-type]
    return None


def sources(version: str | None = None) -> Path:
    """A writable copy of the Go modules under the cache: `go build -mod=mod` may rewrite go.sum, and an
    installed package (a wheel in a system site-packages) can be read-only. Keyed like the binaries."""
    v = kube_version(version)
    dst = cache_dir() / "src" / _sources_key(v)
    dirs = module_dirs(v).values()
    if not all((dst / d / "go.mod").is_file() for d in dirs):
        if not all((GOBUILD / d / "go.mod").is_file() for d in dirs):
            raise BuildError(f"the control plane's Go sources are not in {GOBUILD}: reinstall batkube-py")
        tmp = dst.with_name(f"{dst.name}.tmp{os.getpid()}")
        for d in dirs:
            shutil.copytree(GOBUILD / d, tmp / d, dirs_exist_ok=True)
        shutil.rmtree(dst, ignore_errors=True)
        os.replace(tmp, dst)
    return dst


def _ldflags(binary: str, version: str) -> str:
    if binary == "etcd":
        return "-s -w"
    major, minor, _ = version[1:].split(".")
    pkgs = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
    parts = ["-s -w"]
    for p in pkgs:
        parts += [
            f"-X {p}.gitVersion={version}",
            f"-X {p}.gitMajor={major}",
            f"-X {p}.gitMinor={minor}",
            f"-X {p}.gitTreeState=clean",
            f"-X {p}.buildDate=1970-01-01T00:00:00Z",
        ]
    return " ".join(parts)


def build(log=sys.stderr, attempts: int = 3, version: str | None = None) -> Binaries:
    """Build what is missing; retries because a module download can fail transiently."""
    v = kube_version(version)
    go = shutil.which("go")
    if go is None:
        raise BuildError(
            f"`go` is not on PATH: install Go >= {GO_MIN} (kubernetes 1.37 needs it) to build "
            "the control plane, or put etcd, kube-apiserver and kube-scheduler on PATH"
        )
    out = bin_dir(v)
    out.mkdir(parents=True, exist_ok=True)
    src = sources(v)
    dirs = module_dirs(v)
    env = dict(os.environ)
    env.setdefault("GOMODCACHE", str(cache_dir() / "go" / "mod"))
    env.setdefault("GOCACHE", str(cache_dir() / "go" / "build"))
    env.update(GOFLAGS="-mod=mod -trimpath", CGO_ENABLED="0", GOTOOLCHAIN="local")
    for binary in BINARIES:
        target = out / binary
        if target.is_file():
            continue
        if _reuse(out, v, binary):
            print(f"{binary}: the same sources as an earlier build, reused", file=log, flush=True)
            continue
        module, pkg = _MAIN[binary]
        go_build(go, binary, target, pkg, _ldflags(binary, v), src / dirs[module], env, log, attempts)
    return Binaries(out / "etcd", out / "kube-apiserver", out / "kube-scheduler", v in CLOCK_VERSIONS)


def go_build(go: str, name: str, target: Path, pkg: str, ldflags: str, cwd: Path, env: dict[str, str], log,
             attempts: int) -> None:  # fmt: skip
    """`go build` of one main into target, retried: a module download can fail transiently."""
    cmd = [go, "build", "-o", f"{target}.tmp", "-ldflags", ldflags, pkg]
    for attempt in range(1, attempts + 1):
        t0 = time.monotonic()
        print(f"building {name} ({' '.join(cmd[1:3])}) attempt {attempt}", file=log, flush=True)
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
        if proc.returncode == 0:
            os.replace(f"{target}.tmp", target)
            print(f"built {name} in {time.monotonic() - t0:.0f} s", file=log, flush=True)
            return
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        if attempt == attempts:
            raise BuildError(f"go build of {name} failed {attempts} times; last error:\n{tail}")
        print(f"go build of {name} failed, retrying:\n{tail}", file=log, flush=True)
        time.sleep(5 * attempt)
