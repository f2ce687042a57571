"""etcd + kube-apiserver + kube-scheduler on loopback, as detached processes with a state file.

No controller-manager and no kubelet: the adapter creates the nodes and plays the kubelet's part
(finishing and deleting pods), so nothing else writes to the cluster. Every listener is 127.0.0.1.
The state file lets `batkube controlplane down` in another shell stop exactly the processes `up` started
(checked by pid *and* command line, so a recycled pid is never signalled).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from pathlib import Path

import yaml
from pydantic import BaseModel

from batkube_py import safeyaml
from batkube_py.controlplane import build, pki

DEFAULT_SCHEDULER_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
}
# A kube-scheduler without batkube's clock backs off on the wall clock: 1 s (the minimum the API
# accepts) keeps a step's wait short. With the clock (--sync queue) backoff is simulated time and decides
# when pods are retried, so upstream's defaults (1 s doubling to 10 s) stay.
WALL_CLOCK_BACKOFF = {"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 1}
# The scheduler's client-side rate limiter (50 requests/s, bursts of 100 by default) delays its bindings on
# the wall clock, never the simulated one: at 40 bindings a wall second it held each ~6 ms. On this
# private control plane nothing else needs protecting, so it is lifted unless the user's config sets it.
CLIENT_RATE = {"qps": 5000, "burst": 10000}
# The processes of a control plane, in start order, with the method that starts one (and waits until it
# serves). `up` starts them in this order, `down` stops them in reverse, the supervisor restarts any.
COMPONENTS = {"etcd": "start_etcd", "kube-apiserver": "start_apiserver", "kube-scheduler": "start_scheduler"}
_ORDER = tuple(reversed(COMPONENTS))
# Pod groups (docs/gangs.md): the PodGroup API, the pod's schedulingGroup and the scheduler's group
# cycle are behind GenericWorkload (beta, off in 1.37), topology constraints behind
# TopologyAwareWorkloadScheduling (alpha); scheduling.k8s.io/v1beta1 is a beta API disabled by default.
GROUP_GATES = "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
GROUP_API = "scheduling.k8s.io/v1beta1=true"


class ControlPlaneError(RuntimeError):
    pass


class State(BaseModel):
    dir: Path
    kubeconfig: Path
    server: str
    etcd_port: int
    apiserver_port: int
    scheduler_port: int
    clock_port: int | None = None  # batkube's kube-scheduler main: the simulated-clock endpoint
    etcd_peer_port: int | None = None
    pids: dict[str, int] = {}
    versions: dict[str, str] = {}
    build_version: str | None = None  # the --kube-version `up` was given: a restart uses the same binaries
    starts: dict[str, int] = {}  # how often each component was started (log files NAME.log.K kept)
    held: list[str] = []  # stopped on purpose (`stop`): the supervisor leaves them down
    supervisor: int | None = None  # pid of `controlplane up`'s supervisor (supervisor.py)

    @property
    def scheduler_metrics(self) -> str:
        return f"https://127.0.0.1:{self.scheduler_port}/metrics"

    @property
    def scheduler_clock(self) -> str | None:
        return f"127.0.0.1:{self.clock_port}" if self.clock_port else None


def default_dir() -> Path:
    return build.cache_dir() / "controlplane" / "default"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 2.0, ca: Path | None = None, token: str | None = None) -> tuple[int, str]:
    ctx = ssl.create_default_context(cafile=str(ca)) if ca else ssl._create_unverified_context()
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=ctx) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")
    except (OSError, ssl.SSLError) as exc:
        return 0, str(exc)


def _alive(pid: int, marker: str) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return marker in cmdline and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def groups_enabled(st: State) -> bool:
    """Whether the control plane runs with pod groups on: Kubernetes 1.37 and later (1.32 has none)."""
    parts = st.versions.get("kubernetes", "").lstrip("v").split(".")
    return len(parts) > 1 and parts[0] == "1" and parts[1].isdigit() and int(parts[1]) >= 37


class ControlPlane:
    def __init__(self, directory: Path | None = None):
        self.dir = (directory or default_dir()).resolve()
        self.state_file = self.dir / "state.json"
        self._procs: dict[int, subprocess.Popen] = {}  # the processes this object started, by pid

    def _is_alive(self, pid: int) -> bool:
        """Our own children by their Popen handle (exact, reaps them); others by /proc and command line."""
        if pid in self._procs:
            return self._procs[pid].poll() is None
        return _alive(pid, str(self.dir))

    # ---- state ----------------------------------------------------------------------------------

    def state(self) -> State | None:
        try:
            return State.model_validate_json(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def _save(self, st: State) -> None:
        tmp = self.state_file.with_name(f"state.json.{os.getpid()}")
        tmp.write_text(st.model_dump_json(indent=1))
        os.replace(tmp, self.state_file)

    def _edit(self, st: State, change) -> None:
        """Apply `change` to the saved state and to `st`, under a lock: the supervisor and the user's
        `stop`/`start` write it from different processes."""
        with open(self.dir / ".state.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = self.state() or st
            change(current)
            change(st)
            self._save(current)

    def running(self) -> dict[str, bool]:
        st = self.state()
        return {n: bool(st and n in st.pids and self._is_alive(st.pids[n])) for n in _ORDER}

    # ---- lifecycle ------------------------------------------------------------------------------

    def up(self, scheduler_config: Path | None = None, timeout: float = 60.0, attempts: int = 2,
           version: str | None = None) -> State:  # fmt: skip
        """Start all three; one retry on fresh ports if a component dies during start-up (a port race)."""
        for attempt in range(attempts):
            try:
                return self._up(scheduler_config, timeout, version)
            except ControlPlaneError as exc:
                if attempt + 1 == attempts or "exited during start-up" not in str(exc):
                    raise
        raise AssertionError("unreachable")

    def _up(self, scheduler_config: Path | None, timeout: float, version: str | None) -> State:
        try:
            bins = build.find_binaries(version)
        except build.BuildError as exc:
            raise ControlPlaneError(str(exc)) from None
        if bins is None:
            v = build.kube_version(version)
            raise ControlPlaneError(
                f"etcd/kube-apiserver/kube-scheduler {v} not found: run `batkube controlplane build"
                f"{'' if v == build.DEFAULT_KUBE_VERSION else ' --kube-version ' + v}` (builds the pinned "
                "releases from the Go module proxy, ~10 min once) or put them on PATH"
            )
        self._bins = bins
        if any(self.running().values()):
            raise ControlPlaneError(
                f"a control plane already runs in {self.dir}; `batkube controlplane down`"
            )
        self.dir.mkdir(parents=True, exist_ok=True)
        token = pki.make_pki(self.dir / "pki")
        shutil.rmtree(self.dir / "etcd-data", ignore_errors=True)
        st = State(
            dir=self.dir,
            kubeconfig=self.dir / "kubeconfig",
            server="",
            etcd_port=_free_port(),
            apiserver_port=_free_port(),
            scheduler_port=_free_port(),
            clock_port=_free_port() if bins.clock else None,
        )
        st.server = f"https://127.0.0.1:{st.apiserver_port}"
        st.kubeconfig.write_text(pki.kubeconfig(st.server, self.dir / "pki" / "ca.crt", token))
        kube = bins.version() or "unknown"
        st.versions = {"kubernetes": kube, "etcd": build.ETCD_FOR.get(kube, "unknown")}
        st.build_version, st.etcd_peer_port = version, _free_port()
        self.write_scheduler_config(st, scheduler_config)
        self._save(st)
        try:
            for name in COMPONENTS:
                self.start(name, st, timeout)
        except BaseException:  # Ctrl-C or SIGTERM while waiting for a component too: nothing left running
            self.down()
            raise
        return st

    def start(self, name: str, st: State, timeout: float = 60.0) -> None:
        """Start one component (again) and wait until it serves."""
        getattr(self, COMPONENTS[name])(st, timeout)

    def start_etcd(self, st: State, timeout: float = 60.0) -> None:
        self._start(st, "etcd", [str(self._binaries().etcd), *self._etcd_args(st)])
        self._wait(f"http://127.0.0.1:{st.etcd_port}/health", timeout, "etcd")

    def _etcd_args(self, st: State) -> list[str]:
        url = f"http://127.0.0.1:{st.etcd_port}"
        peer = f"http://127.0.0.1:{st.etcd_peer_port or _free_port()}"
        return [
            f"--data-dir={self.dir / 'etcd-data'}",
            f"--listen-client-urls={url}",
            f"--advertise-client-urls={url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=default={peer}",
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]

    def start_apiserver(self, st: State, timeout: float = 60.0) -> None:
        p = self.dir / "pki"
        args = [
            f"--etcd-servers=http://127.0.0.1:{st.etcd_port}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={st.apiserver_port}",
            f"--tls-cert-file={p / 'apiserver.crt'}",
            f"--tls-private-key-file={p / 'apiserver.key'}",
            f"--token-auth-file={p / 'tokens.csv'}",
            "--authorization-mode=RBAC",
            f"--service-account-key-file={p / 'sa.pub'}",
            f"--service-account-signing-key-file={p / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            # its not-ready taint waits for a node controller this control plane does not run: the
            # adapter would lift it with one patch per node (kubelet.py)
            "--disable-admission-plugins=TaintNodesByCondition",
            f"--cert-dir={self.dir / 'certs'}",
        ]
        if groups_enabled(st):
            args += [f"--feature-gates={GROUP_GATES}", f"--runtime-config={GROUP_API}"]
        bins = self._binaries()
        self._start(st, "kube-apiserver", [str(bins.kube_apiserver), *args])
        token = st.kubeconfig.read_text().split("token: ", 1)[1].split()[0]
        self._wait(f"{st.server}/readyz", timeout, "kube-apiserver", ca=p / "ca.crt", token=token)

    def start_scheduler(self, st: State, timeout: float = 60.0) -> None:
        args = [
            f"--config={self.dir / 'scheduler-config.yaml'}",
            "--bind-address=127.0.0.1",
            f"--secure-port={st.scheduler_port}",
            f"--authentication-kubeconfig={st.kubeconfig}",
            f"--authorization-kubeconfig={st.kubeconfig}",
            "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        ]
        if st.clock_port:
            args.append(f"--batkube-control-address={st.scheduler_clock}")
        if groups_enabled(st):
            args.append(f"--feature-gates={GROUP_GATES}")
        bins = self._binaries()
        self._start(st, "kube-scheduler", [str(bins.kube_scheduler), *args])
        self._wait(f"https://127.0.0.1:{st.scheduler_port}/healthz", timeout, "kube-scheduler")
        if st.clock_port:
            self._wait(f"http://{st.scheduler_clock}/ready", timeout, "kube-scheduler")

    def _binaries(self) -> build.Binaries:
        """The binaries `up` chose (a restart of one component uses the same)."""
        st = self.state()
        bins = getattr(self, "_bins", None) or build.find_binaries(st.build_version if st else None)
        if bins is None:
            raise ControlPlaneError("the control plane's binaries are gone: `batkube controlplane build`")
        self._bins = bins
        return bins

    def write_scheduler_config(self, st: State, user_config: Path | None) -> None:
        """The user's KubeSchedulerConfiguration, pointed at this cluster and without leader election."""
        bins = getattr(self, "_bins", None)
        doc = {**DEFAULT_SCHEDULER_CONFIG, **({} if bins is not None and bins.clock else WALL_CLOCK_BACKOFF)}
        if user_config is not None:
            try:
                doc = safeyaml.load_file(user_config)
            except safeyaml.YamlError as exc:
                raise ControlPlaneError(f"--scheduler-config: {exc}") from None
            if not isinstance(doc, dict) or doc.get("kind") != "KubeSchedulerConfiguration":
                raise ControlPlaneError(f"{user_config} is not a KubeSchedulerConfiguration document")
        conn = doc.setdefault("clientConnection", {})
        conn["kubeconfig"] = str(st.kubeconfig)
        for key, value in CLIENT_RATE.items():
            conn.setdefault(key, value)
        doc.setdefault("leaderElection", {})["leaderElect"] = False
        (self.dir / "scheduler-config.yaml").write_text(yaml.safe_dump(doc))

    def _start(self, st: State, name: str, cmd: list[str]) -> None:
        """Start a component; the log of its previous start, if any, is kept as NAME.log.K."""
        done = st.starts.get(name, 0)
        log_file = self.dir / f"{name}.log"
        if done and log_file.exists():
            os.replace(log_file, self.dir / f"{name}.log.{done}")
        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.dir,
            )
        self._procs[proc.pid] = proc

        def started(s: State) -> None:
            s.pids[name], s.starts[name] = proc.pid, done + 1
            if name in s.held:
                s.held.remove(name)

        self._edit(st, started)

    def _wait(self, url: str, timeout: float, name: str, **kw) -> None:
        st = self.state()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code, body = _get(url, **kw)
            if code == 200:
                return
            if st and not self._is_alive(st.pids.get(name, -1)):
                tail = (self.dir / f"{name}.log").read_text(errors="replace")[-1500:]
                raise ControlPlaneError(
                    f"{name} exited during start-up; end of {self.dir}/{name}.log:\n{tail}"
                )
            time.sleep(0.1)
        raise ControlPlaneError(f"{name} not ready after {timeout:.0f} s ({url}: {code} {body[:200]})")

    def stop(self, name: str, timeout: float = 10.0) -> None:
        """Stop one component on purpose: the supervisor leaves it down until it is started again."""
        st = self.state()
        if st is None or name not in st.pids:
            return
        self._edit(st, lambda s: s.held.append(name) if name not in s.held else None)
        pid = st.pids[name]
        if self._is_alive(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while self._is_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            if self._is_alive(pid):
                os.kill(pid, signal.SIGKILL)
                time.sleep(0.1)
        try:  # reap if we are the parent
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        self._edit(st, lambda s: s.pids.pop(name, None))

    def down(self, remove: bool = False) -> None:
        """Stop what `up` started (its supervisor first); `remove` also deletes the state directory."""
        st = self.state()
        if st is not None and st.supervisor and _alive(st.supervisor, str(self.dir)):
            os.kill(st.supervisor, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while _alive(st.supervisor, str(self.dir)) and time.monotonic() < deadline:
                time.sleep(0.05)
        for name in _ORDER:
            self.stop(name)
        shutil.rmtree(self.dir / ("" if remove else "etcd-data"), ignore_errors=True)

    def status(self) -> dict:
        st = self.state()
        out: dict = {"dir": str(self.dir), "running": self.running()}
        if st is not None:
            out.update(
                kubeconfig=str(st.kubeconfig),
                server=st.server,
                scheduler_metrics=st.scheduler_metrics,
                versions=st.versions,
                supervised=bool(st.supervisor and _alive(st.supervisor, str(self.dir))),
                restarts={n: k - 1 for n, k in st.starts.items() if k > 1},
            )
        return out


def dumps_status(cp: ControlPlane) -> str:
    return json.dumps(cp.status(), indent=1)
