"""`batkube baseline`: a batch-system scheduler as the decision process, for comparison with batkube."""

from __future__ import annotations

from pathlib import Path

import click

from batkube_py.runs import RunError, baseline

_file = click.Path(exists=True, dir_okay=False, path_type=Path)


@click.group("baseline")
def baseline_group() -> None:
    """Batch-system baselines: pybatsim 3.2.1's EASY backfilling on the same platform and workload."""


@baseline_group.command("build")
def build_cmd() -> None:
    """Install pybatsim 3.2.1 into batkube's managed venv ($BATKUBE_CACHE/baselines), once."""
    try:
        python = baseline.build(log=lambda msg: click.echo(msg, err=True))
    except RunError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"pybatsim {baseline.VERSION}: {python}")


@baseline_group.command("run")
@click.argument("scheduler", type=click.Choice(sorted(baseline.SCHEDULERS)))
@click.option("-p", "--platform", type=_file, required=True,
              help="Platform XML (one Batsim resource per host).")
@click.option("-w", "--workload", type=_file, required=True,
              help="Batsim workload; EASY reserves by each job's walltime, so jobs need one.")
@click.option("-o", "--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Run directory (out_jobs.csv, out_schedule.csv, summary.json, pybatsim.log).")
@click.option("--batsim", default=None, help="Batsim executable, or `double` [default: batsim on PATH, else "
              "the double].")
@click.option("--walltime-factor", type=float, default=None,
              help="Jobs without a walltime get delay x F (> 1), in a copy of the workload in OUT.")
@click.option("--seed", type=int, default=None, help="Ignored (EASY is deterministic); accepted as in `run`.")
@click.option("--no-progress", is_flag=True, hidden=True)
def run_cmd(scheduler: str, platform: Path, workload: Path, out: Path, batsim: str | None,
            walltime_factor: float | None, seed: int | None, no_progress: bool) -> None:
    """Run SCHEDULER (easy: pybatsim's easyBackfill) as Batsim's decision process instead of batkube.

    Jobs keep their `res` hosts (a pod group of P pods is P hosts); their cpu, queue and other batkube
    fields are ignored. Without a walltime, Batsim hands a job to EASY with none (-1) and its reservations
    mean nothing: the command refuses such a workload unless --walltime-factor gives one (SWF traces
    such as NASA iPSC's have no requested times).
    """
    try:
        summary = baseline.run(platform, workload, out, scheduler, batsim, walltime_factor=walltime_factor)
    except RunError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(" ".join(f"{k}={summary[k]:g}" if isinstance(summary[k], float) else f"{k}={summary[k]}"
                        for k in ("makespan", "mean_waiting_time", "max_waiting_time", "jobs_total")))
