"""`--backend apiserver` for one run: which cluster, which scheduler, and cleanup whatever happens.

Without --kubeconfig the run uses the control plane `batkube controlplane up` started, or starts a
private one in the run directory for the run's duration (with the user's --scheduler-config), so
`batkube run --backend apiserver` works on its own.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from kubernetes import client, config
from pydantic import BaseModel

from batkube_py import safeyaml
from batkube_py.adapter.decision import BackendFactory
from batkube_py.adapter.translate import DEFAULT_SCHEDULER
from batkube_py.cluster.sync import SyncOptions
from batkube_py.controlplane import lease, supervisor
from batkube_py.controlplane.manager import ControlPlane, ControlPlaneError

if TYPE_CHECKING:
    from batkube_py.cluster.apiserver import ApiServerCluster

log = logging.getLogger(__name__)


class ApiServerConfig(BaseModel):
    kubeconfig: Path | None = None
    scheduler_config: Path | None = None
    controlplane_dir: Path | None = None
    scheduler_names: list[str] = []
    sync: SyncOptions = SyncOptions()
    keep_controlplane: bool = False
    private: bool = False  # a control plane of the run's own, even when a shared one is up
    # the twin that paces / checks the real kube-scheduler (scheduler/versions.py); None: the one that
    # follows the control plane's own release (1.37 for 1.37.2, 1.32 for 1.32.6 and unknown clusters)
    kube_version: Literal["1.32", "1.37"] | None = None
    # Kueue's objects (inputs/queues.py): the real Kueue admits the run's jobs (docs/kueue.md)
    queues: Path | None = None


def scheduler_facts(scheduler_config: Path | None) -> tuple[set[str], float]:
    """The profiles' schedulerNames and podMaxBackoffSeconds of a KubeSchedulerConfiguration
    (upstream's defaults without one)."""
    try:
        doc = (safeyaml.load_file(scheduler_config) if scheduler_config else None) or {}
    except safeyaml.YamlError as exc:
        raise ControlPlaneError(f"--scheduler-config: {exc}") from None
    if not isinstance(doc, dict):
        raise ControlPlaneError(f"--scheduler-config {scheduler_config}: not a KubeSchedulerConfiguration")
    names = {p.get("schedulerName", DEFAULT_SCHEDULER) for p in doc.get("profiles") or [{}]}
    return names, float(doc.get("podMaxBackoffSeconds", 10))


@contextlib.contextmanager
def apiserver_session(cfg: ApiServerConfig, run_dir: Path | None = None) -> Iterator[BackendFactory]:
    started: ControlPlane | None = None
    sync = cfg.sync.model_copy()
    names = set(cfg.scheduler_names)
    kube_names: set[str] = set()
    kubeconfig = cfg.kubeconfig
    version = "unknown"
    cp: ControlPlane | None = None
    if kubeconfig is None:
        cp = ControlPlane(cfg.controlplane_dir)
        if cfg.private or not all(cp.running().values()):
            if cfg.private and cfg.controlplane_dir is not None:
                raise ControlPlaneError("--private-controlplane starts a control plane of the run's own: "
                                        "leave out --controlplane-dir")  # fmt: skip
            if cfg.controlplane_dir is None:
                where = run_dir if run_dir is not None else Path(tempfile.mkdtemp(prefix="batkube-run-"))
                cp = ControlPlane(where / "controlplane")
            log.info("starting a control plane in %s for this run", cp.dir)
            cp.up(cfg.scheduler_config)
            started = cp
        st = cp.state()
        if st is None:
            raise ControlPlaneError(f"no control plane state in {cp.dir}")
        kubeconfig = st.kubeconfig
        version = st.versions.get("kubernetes", "unknown")
        if sync.metrics_url is None:
            sync.metrics_url = st.scheduler_metrics
        if sync.clock_address is None:
            sync.clock_address = st.scheduler_clock
        kube_names, sync.max_backoff = scheduler_facts(cp.dir / "scheduler-config.yaml")
        names |= kube_names
    elif sync.metrics_url is not None:
        # an existing cluster: the metrics are those of a kube-scheduler with these profiles
        kube_names, sync.max_backoff = scheduler_facts(cfg.scheduler_config)
        if cfg.scheduler_names:
            names |= kube_names
    # imported here, not at the top: the embedded backend's `run` and `serve` start faster without it
    from batkube_py.cluster.apiserver import ApiServerCluster

    if sync.policy == "auto":
        kube_only = bool(sync.metrics_url) and names <= kube_names
        sync.policy = ("queue" if sync.clock_address else "paced") if kube_only else "settle"
        log.info("--sync auto: %s", sync.policy)
    if sync.policy == "queue" and not sync.clock_address:
        raise ControlPlaneError(
            "--sync queue needs batkube's kube-scheduler 1.37.2 main, started by batkube (`batkube "
            f"controlplane up`, or no --kubeconfig); this one is kube-scheduler {version} without its clock"
        )
    sync.pop_from_backoff = _minor(version) >= 33
    if cfg.kube_version is None:
        cfg = cfg.model_copy(update={"kube_version": "1.37" if _minor(version) >= 37 else "1.32"})
        log.info("the twin checking kube-scheduler %s follows its release (--kube-version %s)", version,
                 cfg.kube_version)  # fmt: skip
    log.info("apiserver backend: kube-scheduler %s, sync policy %s", version, sync.policy)
    paced = None
    if sync.policy in ("paced", "queue"):
        real_config = cp.dir / "scheduler-config.yaml" if cfg.kubeconfig is None else cfg.scheduler_config
        paced = paced_parts(cfg, real_config, names, kube_names, sync)
    run_id, lease_file = None, None
    if cp is not None:  # before Batsim starts: a busy control plane is refused with the reason
        try:
            run_id, lease_file = lease.acquire(cp.dir, sync.clock_address, run_dir)
        except ControlPlaneError:
            if started is not None and not cfg.keep_controlplane:
                started.down()
            raise
    kueue = kueue_parts(cfg, sync, Path(kubeconfig), run_dir)
    api = config.new_client_from_config(config_file=str(kubeconfig))
    api.configuration.connection_pool_maxsize = 8
    clusters: list[ApiServerCluster] = []

    def factory(nodes: list[client.V1Node]) -> ApiServerCluster:
        cluster: ApiServerCluster
        if paced is not None:
            from batkube_py.cluster.parity import Parity

            profiles, queue = paced
            parity = Parity(run_dir / "parity.csv" if run_dir is not None else None)
            if sync.policy == "queue" and kueue is not None:
                from batkube_py.cluster.realkueue import KueueCluster

                process, documents = kueue
                cluster = KueueCluster(nodes, api, sync, sync.clock_address, profiles, queue, kube_names,
                                       parity, kueue=process, documents=documents)  # fmt: skip
            elif sync.policy == "queue":
                from batkube_py.cluster.queued import QueueCluster

                clock = sync.clock_address
                cluster = QueueCluster(nodes, api, sync, clock, profiles, queue, kube_names, parity,
                                       clock_run=run_id)  # fmt: skip
            else:
                from batkube_py.cluster.paced import PacedCluster

                cluster = PacedCluster(nodes, api, sync, profiles, queue, kube_names, parity)
        else:
            cluster = ApiServerCluster(nodes, api, sync, scheduler_names=names or None, kube_names=kube_names)
        cluster.facts.update({"sync_policy": sync.policy, "kubernetes_version": version})
        cluster.disposable = started is not None and not cfg.keep_controlplane
        if cp is not None:
            plane = cp
            cluster.calls.diagnose = lambda: supervisor.diagnose(plane)
        clusters.append(cluster)
        return cluster

    try:
        yield factory
    finally:
        for c in clusters:
            c.close()
        api.close()
        if lease_file is not None:
            lease_file.unlink(missing_ok=True)
        if started is not None and not cfg.keep_controlplane:
            started.down()


def paced_parts(cfg: ApiServerConfig, real_config: Path | None, names: set[str], kube_names: set[str],
                sync: SyncOptions):  # fmt: skip
    """The twin that paces (or, under --sync queue, checks) the real scheduler: the real scheduler's
    profiles (the configuration it runs), and the queue's backoff as the user configured it (upstream's
    defaults without --scheduler-config) under paced, where the real scheduler's own backoff settings
    only shorten its wall-clock waits; as the real scheduler runs it under queue."""
    from batkube_py.scheduler.config import ConfigError, build_profiles, default_config, load_config
    from batkube_py.scheduler.queue import QueueConfig

    if not sync.metrics_url:
        raise ControlPlaneError("--sync paced needs kube-scheduler's /metrics (--scheduler-metrics URL)")
    if others := sorted(names - kube_names):
        raise ControlPlaneError(
            f"--sync paced paces kube-scheduler's own profiles; {', '.join(others)} is served by another "
            "scheduler: use --sync settle"
        )
    if cfg.scheduler_config is not None and real_config is not None and real_config != cfg.scheduler_config:
        if _profiles_part(cfg.scheduler_config) != _profiles_part(real_config):
            raise ControlPlaneError(
                f"the control plane's kube-scheduler runs {real_config}, not --scheduler-config "
                f"{cfg.scheduler_config}: start one with `batkube controlplane up --scheduler-config "
                f"{cfg.scheduler_config}`, or leave out --controlplane-dir for a private one"
            )
    try:
        v = cfg.kube_version
        real = load_config(real_config, v) if real_config is not None else default_config(v)
        user = load_config(cfg.scheduler_config, v) if cfg.scheduler_config is not None else default_config(v)
    except ConfigError as exc:
        raise ControlPlaneError(f"--scheduler-config: {exc}") from None
    # under --sync queue the real scheduler backs off on the simulated clock: its own settings are the
    # run's (upstream's defaults in the control plane batkube starts, docs/sync.md)
    b = real if sync.policy == "queue" else user
    if (b.pod_initial_backoff, b.pod_max_backoff) != (user.pod_initial_backoff, user.pod_max_backoff):
        log.warning("kube-scheduler runs podInitialBackoffSeconds %g / podMaxBackoffSeconds %g, not the "
                    "%g / %g asked for: its queue (and the twin checking it) backs off as it runs",
                    b.pod_initial_backoff, b.pod_max_backoff, user.pod_initial_backoff,
                    user.pod_max_backoff)  # fmt: skip
    queue = QueueConfig(pod_initial_backoff=b.pod_initial_backoff, pod_max_backoff=b.pod_max_backoff,
                        kube_version=v)  # fmt: skip
    return build_profiles(real, 0), queue


def kueue_parts(cfg: ApiServerConfig, sync: SyncOptions, kubeconfig: Path, run_dir: Path | None):
    """The run's Kueue process (not started yet) and the objects it needs, or None without --queues."""
    if cfg.queues is None:
        return None
    from batkube_py.controlplane.build import BuildError
    from batkube_py.controlplane.kueue import KueueProcess, configuration
    from batkube_py.controlplane.kueuebuild import find_kueue, kueue_version
    from batkube_py.inputs.queues import load_queues

    if sync.policy != "queue":
        raise ControlPlaneError(
            f"--queues on the real backend runs Kueue on the simulated clock beside kube-scheduler's own "
            f"queue: --sync queue (or auto) is needed, not --sync {sync.policy}"
        )
    try:
        binary = find_kueue()
    except BuildError as exc:
        raise ControlPlaneError(str(exc)) from None
    if binary is None:
        raise ControlPlaneError(
            f"Kueue {kueue_version()} is not built: run `batkube controlplane build` (it builds Kueue too)"
        )
    queues = load_queues(cfg.queues)
    workdir = (run_dir or Path(".")) / "kueue"
    if (why := queues.afs_refusal()) is not None:
        raise ControlPlaneError(why)
    conf = queues.configuration
    fair = conf.fair_sharing if conf is not None else None
    kcfg = configuration(fair.model_dump(by_alias=True, mode="json") if fair is not None else None)
    log.info("Kueue %s admits the jobs (%s)", binary.version, cfg.queues)
    return KueueProcess(binary, kubeconfig, workdir, kcfg), queues.documents


def _minor(version: str) -> int:
    """33 for "v1.33.0"; 0 when unknown (a cluster batkube did not start: 1.32's behaviour assumed)."""
    parts = version.lstrip("v").split(".")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def _profiles_part(path: Path) -> dict:
    """What decides placements in a KubeSchedulerConfiguration: not the connection, leader election or
    the wall-clock backoff batkube sets for the control plane it starts."""
    doc = safeyaml.load_file(path) or {}
    skip = {"clientConnection", "leaderElection", "podInitialBackoffSeconds", "podMaxBackoffSeconds"}
    return {k: v for k, v in doc.items() if k not in skip} if isinstance(doc, dict) else {}
