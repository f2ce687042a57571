"""`batkube parity`: run a workload on the real kube-scheduler and check every binding against the twin.

For users who want to trust the embedded twin with their own KubeSchedulerConfiguration before running
thousands of simulations on it (docs/sync.md, "Parity"). Exit status 1 when some decision differs.
With --queues, the real Kueue and kube-scheduler against both twins, job by job (cli/kueueparity.py).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from batkube_py.cli.util import fixed
from batkube_py.cluster.sync import SyncOptions
from batkube_py.controlplane.session import ApiServerConfig
from batkube_py.runs.run import RunConfig

_file = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.command("parity")
@click.option("--platform", "-p", type=_file, required=True, help="SimGrid platform XML.")
@click.option("--workload", "-w", type=_file, required=True, help="Batsim JSON workload.")
@click.option("--out", "-o", type=click.Path(path_type=Path), required=True,
              help="Run directory (the run's outputs, and parity.csv with every mismatch).")  # fmt: skip
@click.option("--scheduler-config", type=_file, default=None,
              help="KubeSchedulerConfiguration for both the real scheduler and the twin.")  # fmt: skip
@click.option(
    "--controlplane-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Use the control plane `batkube controlplane up` started there (default: a private one).",
)
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the twin's draws (see `batkube run --help`).")  # fmt: skip
@click.option("--batsim", default=None, help="Batsim executable, or `double` (default: as `batkube run`).")
@click.option("--overwrite", is_flag=True, help="Replace the outputs of an earlier run in --out.")
@click.option(
    "--kube-version",
    type=click.Choice(["1.37", "1.32"]),
    default=None,
    help="The release the twin follows (default: the control plane's, 1.32; docs/versions.md).",
)
@click.option("--queues", type=_file, default=None, metavar="FILE",
              help="Kueue objects: run on the real Kueue v0.17.0 + kube-scheduler 1.37.2 and on the twins, "
              "and compare job by job (docs/kueue.md, Parity).")  # fmt: skip
def parity_cmd(platform, workload, out, scheduler_config, controlplane_dir, seed, batsim, overwrite,
               kube_version, queues) -> None:  # fmt: skip
    """Run WORKLOAD on PLATFORM with the real kube-scheduler and check each of its decisions against
    the embedded twin on the same cluster state; with --queues, run it on the real Kueue and
    kube-scheduler and on their twins, and compare every job's admission, queue, flavor, evictions,
    node and start."""
    from batkube_py.cli.app import run_claimed

    if queues is not None:
        if kube_version not in (None, "1.37"):
            raise click.UsageError("--queues compares with the real Kueue beside kube-scheduler 1.37.2: "
                                   "--kube-version must be 1.37")  # fmt: skip
        from batkube_py.cli.kueueparity import parity_queues

        parity_queues(platform, workload, queues, out, scheduler_config, controlplane_dir, seed, batsim,
                      overwrite)  # fmt: skip
        return

    cfg = RunConfig(platform=platform, workload=workload, out=out, seed=seed, batsim=batsim,
                    progress=sys.stderr.isatty(), scheduler_config=scheduler_config)  # fmt: skip
    # auto: kube-scheduler 1.37.2 started by batkube runs its own queue (--sync queue, which also
    # schedules pod groups: res > 1 jobs), other releases are paced by the twin's queue
    api_cfg = ApiServerConfig(scheduler_config=scheduler_config, controlplane_dir=controlplane_dir,
                              sync=SyncOptions(policy="auto"))  # fmt: skip
    if kube_version:
        api_cfg.kube_version = kube_version
    summary = run_claimed(cfg, api_cfg, overwrite)
    if summary.get("error"):
        raise click.ClickException(summary["error"])
    report(summary, out / "parity.csv")


def report(summary: dict, path: Path) -> None:
    console = Console()
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    console.print(
        f"{summary['parity_bindings_checked']} bindings and {summary['parity_failures_checked']} failed "
        f"attempts of kube-scheduler checked against the twin ({summary['parity_ties']} bindings among "
        f"tied best nodes; {summary['parity_skipped_retries']} retries skipped: the pod fit no node's "
        f"free room); makespan {fixed(summary['makespan'])}, mean wait {fixed(summary['mean_waiting_time'])}"
    )
    if timing := summary.get("parity_timing_mismatches"):
        console.print(
            f"{timing} timing rows: a pod (or pod group) one queue tried at a time the other did not"
        )
    if not rows:
        console.print("[green]no mismatch[/green]")
        return
    table = Table(title=f"{len(rows)} mismatches ({path})")
    for col in ("time", "pod", "kind", "real", "twin_best", "detail"):
        table.add_column(col)
    for r in rows[:50]:
        table.add_row(*(r[c] for c in ("time", "pod", "kind", "real", "twin_best", "detail")))
    console.print(table)
    sys.exit(1)
