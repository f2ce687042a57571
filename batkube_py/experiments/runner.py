"""`batkube experiment run`: plan, skip what is done, execute the rest with a progress bar, report.

Resuming is the default because campaigns are long and get interrupted: a run is redone only if its
directory has no successful result for the same command line and input files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from batkube_py.experiments import report, spec
from batkube_py.experiments.executors import make_executor
from batkube_py.experiments.plan import Task, plan
from batkube_py.experiments.worker import finished


class ExperimentError(RuntimeError):
    pass


@dataclass
class Options:
    out: Path | None = None
    jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    executor: str = "local"
    address: str | None = None
    batsim: str | None = None
    repetitions: int | None = None
    variants: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    overrides: dict[str, str] = field(default_factory=dict)
    progress: bool = True
    command: str = "batkube experiment run"


def _need_controlplane(tasks: list[Task]) -> None:
    """apiserver runs need etcd / kube-apiserver / kube-scheduler; say so before starting anything, and
    never quietly drop those runs: the user narrows the campaign with --variant instead."""
    names = sorted({t.variant for t in tasks if t.backend == "apiserver" and "--kubeconfig" not in t.argv})
    if not names:
        return
    from batkube_py.controlplane import build

    if build.find_binaries() is None:
        raise ExperimentError(
            f"variant(s) {', '.join(names)} use the real kube-scheduler (backend: apiserver), but etcd / "
            f"kube-apiserver / kube-scheduler were not found: `batkube controlplane build` (Go >= "
            f"{build.GO_MIN}) or `nix develop` provides them; or run the other variants only with "
            "--variant NAME"
        )


def _need_batsim(batsim: str | None) -> None:
    """Before anything is planned or re-run: a campaign without a simulator would only fail its runs."""
    from batkube_py.runs import RunError
    from batkube_py.runs.batsim import find_batsim

    try:
        find_batsim(batsim)
    except RunError as exc:
        raise ExperimentError(str(exc)) from None


def run_experiment(path: Path, opts: Options) -> report.Outcome:
    exp = spec.load(path, opts.overrides)
    _need_batsim(opts.batsim)
    base = path.resolve().parent
    out = (opts.out or Path("runs") / "experiments" / exp.name).resolve()
    out.mkdir(parents=True, exist_ok=True)
    tasks = plan(
        exp,
        base,
        out,
        batsim=opts.batsim,
        repetitions=opts.repetitions,
        variants=opts.variants,
        cases=opts.cases,
    )
    _need_controlplane(tasks)
    (out / "experiment.json").write_text(
        json.dumps({"file": str(path.resolve()), "command": opts.command, "spec": exp.model_dump()}, indent=1)
    )
    results: dict[Path, dict[str, Any]] = {}
    todo = []
    for t in tasks:
        prev = finished(t)
        if prev is None:
            todo.append(t)
        else:
            results[t.out] = prev
    bar = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("runs"),
        TextColumn("{task.fields[last]}"),
        TimeElapsedColumn(),
        disable=not opts.progress,
    )
    with bar:
        pid = bar.add_task(exp.name, total=len(tasks), completed=len(tasks) - len(todo), last="")

        def done(task: Task, result: dict[str, Any]) -> None:
            results[task.out] = result
            mark = "" if result.get("status") == "ok" else " FAILED"
            bar.update(pid, advance=1, last=f"{task.name}{mark}")

        make_executor(opts.executor, opts.jobs, opts.address).run(todo, done)
    return report.build(exp, base, out, tasks, results, opts.command)
