"""`batkube controlplane up|down|status|build` and the `--backend apiserver` options of run/serve."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from batkube_py.cluster.sync import SyncOptions
from batkube_py.controlplane import build, kueuebuild, supervisor
from batkube_py.controlplane.manager import ControlPlane, ControlPlaneError, dumps_status
from batkube_py.controlplane.session import ApiServerConfig

_dir = click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path),
    default=None,
    help="State directory (default: $BATKUBE_CACHE/controlplane/default).",
)


_seconds = click.FloatRange(min=0)
_positive = click.FloatRange(min=0, min_open=True)


@click.group("controlplane")
def controlplane() -> None:
    """A loopback etcd + kube-apiserver + kube-scheduler for `--backend apiserver`."""


_version = click.option(
    "--kube-version",
    default=None,
    help=f"Kubernetes release: {', '.join(sorted(build.ETCD_FOR))} (default: $BATKUBE_KUBE_VERSION, "
    f"else {build.DEFAULT_KUBE_VERSION}).",
)


@controlplane.command(
    "build",
    help="Build the pinned etcd / kube-apiserver / kube-scheduler from the Go module proxy (cached); "
    f"needs `go` on PATH, Go >= {build.GO_MIN} (about 10 minutes, once).",
)
@_version
@click.option(
    "--kueue-version",
    default=None,
    help=f"Kueue release built beside them for --queues: {', '.join(kueuebuild.SUPPORTED)} (default: "
    f"$BATKUBE_KUEUE_VERSION, else {kueuebuild.DEFAULT_KUEUE_VERSION}).",
)
def build_cmd(kube_version: str | None, kueue_version: str | None) -> None:
    """Build the pinned etcd / kube-apiserver / kube-scheduler and Kueue's controller from the Go module
    proxy (cached)."""
    t0 = time.monotonic()
    try:
        bins = build.build(version=kube_version)
        kueue = kueuebuild.build_kueue(version=kueue_version)
    except build.BuildError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"{bins.kube_apiserver.parent} ready in {time.monotonic() - t0:.0f} s")
    click.echo(f"Kueue {kueue.version}: {kueue.path}")


@controlplane.command("up")
@_dir
@click.option(
    "--scheduler-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Your KubeSchedulerConfiguration (profiles, plugins, backoff).",
)
@_version
@click.option("--supervise/--no-supervise", default=True, show_default=True,
              help="Restart a component that exits (backoff 1 s doubling to 30 s; logs kept per restart).")
def up_cmd(directory: Path | None, scheduler_config: Path | None, kube_version: str | None,
           supervise: bool) -> None:  # fmt: skip
    """Start the control plane and write a kubeconfig."""
    cp = ControlPlane(directory)
    try:
        st = cp.up(scheduler_config, version=kube_version)
    except ControlPlaneError as exc:
        raise click.ClickException(str(exc)) from None
    pid = supervisor.spawn(cp) if supervise else None
    click.echo(f"control plane up: {st.server} (Kubernetes {st.versions.get('kubernetes')})\n"
               f"kubeconfig: {st.kubeconfig}\nmetrics: {st.scheduler_metrics}"
               + (f"\nsimulated clock: {st.scheduler_clock}" if st.scheduler_clock else "")
               + (f"\nsupervised (pid {pid}): {cp.dir}/supervisor.log" if pid else ""))  # fmt: skip


@controlplane.command("down")
@_dir
def down_cmd(directory: Path | None) -> None:
    """Stop what `up` started (and only that)."""
    ControlPlane(directory).down()
    click.echo("control plane stopped")


@controlplane.command("status")
@_dir
def status_cmd(directory: Path | None) -> None:
    """Which of etcd / kube-apiserver / kube-scheduler run, and where."""
    cp = ControlPlane(directory)
    click.echo(dumps_status(cp))
    if problems := supervisor.diagnose(cp):
        click.echo(f"not serving: {problems}", err=True)
    if not all(cp.running().values()):
        sys.exit(1)


def backend_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Options shared by `run` and `serve` for choosing and synchronising the backend."""
    opts = [
        click.option(
            "--backend",
            type=click.Choice(["embedded", "apiserver"]),
            default="embedded",
            show_default=True,
            help="The in-process twin, or a real kube-apiserver + scheduler.",
        ),
        click.option(
            "--kubeconfig",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="apiserver: an existing cluster (default: `controlplane up`'s, else a private one).",
        ),
        click.option(
            "--controlplane-dir",
            type=click.Path(path_type=Path),
            default=None,
            help="apiserver: use the control plane `controlplane up --dir DIR` started.",
        ),
        click.option(
            "--private-controlplane",
            "private_controlplane",
            is_flag=True,
            help="apiserver: start a control plane of the run's own (in the run directory), even when a "
            "shared one is up (another run may be driving it).",
        ),
        click.option(
            "--fault-patience",
            type=_positive,
            default=60.0,
            show_default=True,
            help="apiserver: s a failing Kubernetes API (restarting apiserver, stalled etcd, 429/5xx) is "
            "retried before the run stops.",
        ),
        click.option(
            "--backoff",
            "backoff_mode",
            type=click.Choice(["expedite", "wait"]),
            default="expedite",
            show_default=True,
            help="apiserver: recreate pods whose backoff expired in simulated time, or wait in wall time.",
        ),
        click.option(
            "--scheduler-config",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="KubeSchedulerConfiguration (profiles, plugin weights and args, backoff): the embedded "
            "twin honours it, and so does the kube-scheduler of a control plane batkube starts.",
        ),
        click.option(
            "--scheduler-name",
            "scheduler_names",
            multiple=True,
            help="apiserver: a schedulerName some scheduler serves (repeatable; default: the profiles).",
        ),
        click.option("--scheduler-metrics", default=None, help="apiserver: kube-scheduler /metrics URL."),
        click.option(
            "--sync",
            "sync_policy",
            type=click.Choice(["auto", "queue", "paced", "settle", "timeout"]),
            default="auto",
            show_default=True,
            help="apiserver: kube-scheduler's own queue on the simulated clock (queue; batkube's "
            "kube-scheduler 1.37.2), or the twin's queue deciding when kube-scheduler tries a pod (paced), "
            "or wait until any scheduler is done (settle), or Batkube's timeouts; auto: queue when "
            "batkube's kube-scheduler 1.37.2 serves every pod, paced with another kube-scheduler, else "
            "settle.",
        ),
        click.option(
            "--timeout-value", type=_seconds, default=0.020, show_default=True,
            help="timeout: wall s waited for a decision per Batsim step.",
        ),
        click.option(
            "--min-delay", type=_seconds, default=0.0, show_default=True,
            help="timeout: wall s a step lasts at least before it ends at a binding.",
        ),
        click.option(
            "--base-simulation-timestep", type=_positive, default=0.1, show_default=True,
            help="timeout: first simulated s of a CALL_ME_LATER wake-up (reset by any event).",
        ),
        click.option(
            "--max-simulation-timestep", type=_positive, default=20.0, show_default=True,
            help="timeout: cap of the wake-up step, in simulated s.",
        ),
        click.option(
            "--backoff-multiplier", type=click.FloatRange(min=1), default=2.0, show_default=True,
            help="timeout: the wake-up step grows by this factor each quiet step.",
        ),
        click.option(
            "--fast-forward-on-no-pending-jobs", is_flag=True, default=False,
            help="timeout: no wake-up while no pod is pending (Batsim jumps to its next event).",
        ),
        click.option(
            "--detect-scheduler-deadlock", is_flag=True, default=False,
            help="timeout: stop the run when pods wait and nothing runs for --scheduler-crash-timeout.",
        ),
        click.option(
            "--scheduler-crash-timeout",
            type=_positive,
            default=30.0,
            show_default=True,
            help="s without a sign of life from the scheduler before the run stops.",
        ),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def apiserver_config(kw: dict[str, Any]) -> ApiServerConfig | None:
    """Pops the backend options from a command's kwargs; None for the embedded backend."""
    keys = (
        "controlplane_dir",
        "private_controlplane",
        "fault_patience",
        "backoff_mode",
        "backend",
        "kubeconfig",
        "scheduler_config",
        "scheduler_names",
        "scheduler_metrics",
        "sync_policy",
        "timeout_value",
        "min_delay",
        "base_simulation_timestep",
        "max_simulation_timestep",
        "backoff_multiplier",
        "fast_forward_on_no_pending_jobs",
        "detect_scheduler_deadlock",
        "scheduler_crash_timeout",
    )
    o = {k: kw.pop(k) for k in keys}
    if o["backend"] == "embedded":
        return None
    sync = SyncOptions(
        policy=o["sync_policy"],
        metrics_url=o["scheduler_metrics"],
        crash_timeout=o["scheduler_crash_timeout"],
        patience=o["fault_patience"],
        timeout=o["timeout_value"],
        min_delay=o["min_delay"],
        base_step=o["base_simulation_timestep"],
        max_step=o["max_simulation_timestep"],
        multiplier=o["backoff_multiplier"],
        fast_forward=o["fast_forward_on_no_pending_jobs"],
        detect_crash=o["detect_scheduler_deadlock"],
        backoff=o["backoff_mode"],
    )
    if o["private_controlplane"] and (o["kubeconfig"] or o["controlplane_dir"]):
        raise click.UsageError("--private-controlplane starts a control plane of the run's own: leave out "
                               "--kubeconfig and --controlplane-dir")  # fmt: skip
    return ApiServerConfig(
        private=o["private_controlplane"],
        kubeconfig=o["kubeconfig"],
        scheduler_config=o["scheduler_config"],
        scheduler_names=list(o["scheduler_names"]),
        controlplane_dir=o["controlplane_dir"],
        sync=sync,
    )
