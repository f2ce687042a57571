"""`batkube parity --queues FILE`: the workload on the real Kueue v0.17.0 + kube-scheduler 1.37.2, then on
the twins, compared job by job (analysis/jobparity.py; docs/kueue.md, "Parity").

Both runs take the same platform, workload, queues, seed and KubeSchedulerConfiguration; the twin follows
kube-scheduler 1.37. The configuration gets `parallelism: 1` unless it sets a parallelism: with one
Filter worker upstream breaks score ties by a fixed rotation the twin follows, so every node must agree.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.table import Table

from batkube_py import safeyaml
from batkube_py.analysis import jobparity
from batkube_py.cluster.sync import SyncOptions
from batkube_py.controlplane.session import ApiServerConfig
from batkube_py.inputs.queues import QueuesError, load_queues
from batkube_py.runs.run import RunConfig

PLAIN = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def scheduler_config(user: Path | None, controlplane_dir: Path | None, out: Path) -> tuple[Path, int]:
    """The configuration both runs take, and its parallelism. A shared control plane runs its own."""
    if controlplane_dir is not None:
        if user is not None:
            raise click.UsageError("--scheduler-config with --controlplane-dir: that control plane's "
                                   "kube-scheduler runs the configuration it was started with")  # fmt: skip
        path = controlplane_dir / "scheduler-config.yaml"
        if not path.is_file():
            raise click.ClickException(f"--controlplane-dir {controlplane_dir}: no scheduler-config.yaml "
                                       "(start it with `batkube controlplane up`)")  # fmt: skip
        return path, int(_load(path).get("parallelism", 16))
    doc = _load(user) if user is not None else dict(PLAIN)
    if "parallelism" not in doc:
        doc["parallelism"] = 1
        note = ("batkube parity: parallelism: 1 added to the scheduler configuration (one Filter worker: "
                "upstream's node ties are then deterministic, the twin follows them)")  # fmt: skip
        click.echo(note, err=True)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "scheduler-config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, int(doc["parallelism"])


def _load(path: Path) -> dict:
    try:
        doc = safeyaml.load_file(path) or {}
    except safeyaml.YamlError as exc:
        raise click.ClickException(f"--scheduler-config: {exc}") from None
    if not isinstance(doc, dict):
        raise click.ClickException(f"--scheduler-config {path}: expected a KubeSchedulerConfiguration")
    return doc


def priorities(workload: Path, queues: Path):
    """A pods.csv row → its Workload's priority in Kueue (the job's WorkloadPriorityClass, else the pod's)."""
    values = {name: pc.value for name, pc in load_queues(queues).priority_classes.items()}
    doc = json.loads(workload.read_text())
    classes = {j.get("id"): j.get("priority_class") for j in doc.get("jobs", []) if isinstance(j, dict)}

    def priority_of(row: dict[str, str]) -> int:
        name = jobparity.base_job(row["job_id"]).partition("!")[2]
        pc = classes.get(name)
        return values[pc] if pc in values else int(row["priority"] or 0)

    return priority_of


def parity_queues(platform: Path, workload: Path, queues: Path, out: Path, user_config: Path | None,
                  controlplane_dir: Path | None, seed: int, batsim: str | None,
                  overwrite: bool) -> None:  # fmt: skip
    from batkube_py.cli.app import run_claimed

    try:
        load_queues(queues)
    except QueuesError as exc:
        raise click.ClickException(str(exc)) from None
    config, parallelism = scheduler_config(user_config, controlplane_dir, out)
    progress = sys.stderr.isatty()
    common = dict(platform=platform, workload=workload, seed=seed, batsim=batsim, progress=progress,
                  scheduler_config=config, queues=queues, kube_version="1.37")  # fmt: skip
    api_cfg = ApiServerConfig(scheduler_config=config, controlplane_dir=controlplane_dir, queues=queues,
                              sync=SyncOptions(policy="queue"), kube_version="1.37")  # fmt: skip
    summaries = {}
    for side, backend in (("real", api_cfg), ("twin", None)):
        summary = run_claimed(RunConfig(out=out / side, **common), backend, overwrite)
        if summary.get("error"):
            raise click.ClickException(f"the {side} run ({out / side}): {summary['error']}")
        summaries[side] = summary
    real, twin = (jobparity.read_pods(out / side / "pods.csv") for side in ("real", "twin"))
    mismatches = jobparity.compare(real, twin)
    tie = jobparity.victim_tie(real, twin, mismatches, priorities(workload, queues))
    mismatches += _scheduler_rows(out / "real" / "parity.csv")
    if parallelism != 1 and not any(m.field.startswith("kube-scheduler") for m in mismatches):
        for m in mismatches:
            if m.field == "node" and not m.tie:
                m.tie = f"a node among the tied best (parallelism {parallelism}: upstream's order varies)"
    mismatches.sort(key=lambda m: (m.at, m.job, m.field))  # the first divergence first
    jobparity.write(out / "parity.csv", mismatches)
    jobs = {jobparity.base_job(j) for j in real.keys() | twin.keys()}
    differing = {jobparity.base_job(m.job) for m in mismatches if m.job in real or m.job in twin}
    figures = {
        "jobs": len(jobs), "identical": len(jobs - differing), "mismatches": len(mismatches),
        "untied": sum(not m.tie for m in mismatches), "victim_tie": tie, "parallelism": parallelism,
        "kueue_version": summaries["real"].get("kueue_version"),
        "kubernetes_version": summaries["real"].get("kubernetes_version"),
        "kube_scheduler_checked": summaries["real"].get("parity_bindings_checked", 0),
    }  # fmt: skip
    (out / "parity.json").write_text(json.dumps(figures, indent=1) + "\n")
    report(figures, mismatches, out / "parity.csv")


def _scheduler_rows(path: Path) -> list[jobparity.Mismatch]:
    """The real run's own check of each kube-scheduler binding against the twin on the same state."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    return [jobparity.Mismatch(r["pod"], f"kube-scheduler: {r['kind']}", r["real"], r["twin_best"],
                               float(r["time"] or 0)) for r in rows]  # fmt: skip


def report(figures: dict, mismatches: list[jobparity.Mismatch], path: Path) -> None:
    console = Console()
    console.print(
        f"{figures['jobs']} jobs on Kueue {figures['kueue_version']} + kube-scheduler "
        f"{figures['kubernetes_version']} and on the twins: {figures['identical']} identical (admission, "
        f"ClusterQueue, flavor, evictions, node, start); {figures['kube_scheduler_checked']} bindings of "
        "kube-scheduler checked against its twin on the same state"
    )
    if figures["victim_tie"]:
        console.print(f"[yellow]documented tie[/yellow]: {figures['victim_tie']}")
    if not mismatches:
        console.print("[green]no mismatch[/green]")
        return
    table = Table(title=f"{len(mismatches)} mismatches ({path})")
    for col in jobparity.COLUMNS:
        table.add_column(col)
    for m in mismatches[:50]:
        table.add_row(*m.row().values())
    console.print(table)
    if figures["untied"]:
        sys.exit(1)
