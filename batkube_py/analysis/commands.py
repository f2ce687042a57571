"""``batkube analyze`` and ``batkube compare`` (registered on the ``batkube`` group in cli.py).

The commands only parse options, show progress and turn :class:`AnalysisError` (and any other failure on
bad input) into a :class:`click.ClickException`, so users see the file and the problem, not a traceback.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from batkube_py.analysis import compare as cmp
from batkube_py.analysis import tenants
from batkube_py.analysis.figures import render_all
from batkube_py.analysis.loading import AnalysisError, load_run
from batkube_py.analysis.metrics import clock_note
from batkube_py.analysis.report import attach_platform, check_against_schedule, compute_metrics, write_metrics

SUMMARY_KEYS = (
    "jobs_total",
    "jobs_succeeded",
    "jobs_failed",
    "jobs_killed",
    "jobs_rejected",
    "makespan",
    "mean_waiting_time",
    "p95_waiting_time",
    "max_waiting_time",
    "mean_turnaround_time",
    "mean_bounded_slowdown",
    "throughput_jobs_per_hour",
    "host_utilisation",
    "cpu_utilisation",
    "cpu_over_allocations",
)


@contextlib.contextmanager
def _progress(total: int, quiet: bool) -> Iterator[Callable[[str], None]]:
    """A ``step(name)`` callback driving a rich progress bar on stderr (silent when not a terminal)."""
    console = Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet or not console.is_terminal,
    ) as progress:
        task = progress.add_task("analysing", total=total)

        def step(name: str) -> None:
            progress.update(task, advance=1, description=name)

        yield step


@contextlib.contextmanager
def _user_errors(what: str) -> Iterator[None]:
    try:
        yield
    except AnalysisError as exc:
        raise click.ClickException(str(exc)) from exc
    except (ValueError, KeyError, TypeError, OSError, AttributeError, RecursionError, MemoryError) as exc:
        raise click.ClickException(f"{what}: {type(exc).__name__}: {str(exc)[:300]}") from None


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 1 else f"{value:.1f}"
    return str(value)


@click.command("analyze")
@click.argument("run_dir", type=click.Path(exists=True, path_type=Path))
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to write metrics and figures [default: RUN_DIR/analysis].",
)
@click.option(
    "--platform",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Platform XML giving node cpu (<prop id=core|cpu>) when RUN_DIR has no nodes.csv.",
)
@click.option(
    "--workload",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Workload JSON giving each job's cpu (profile 'cpu') when RUN_DIR has no pods.csv.",
)
@click.option(
    "--bsld-tau",
    type=click.FloatRange(min=0.0, min_open=True),
    default=10.0,
    show_default=True,
    help="Threshold (s) of the bounded slowdown max(1, turnaround / max(execution, tau)).",
)
@click.option("--no-figures", is_flag=True, help="Only write metrics.json / metrics.csv.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar and no summary on stdout.")
def analyze(
    run_dir: Path,
    out: Path | None,
    platform: Path | None,
    workload: Path | None,
    bsld_tau: float,
    no_figures: bool,
    quiet: bool,
) -> None:
    """Metrics and figures of one run.

    RUN_DIR is a run directory (Batsim's out_jobs.csv, plus pods.csv, nodes.csv and decisions.jsonl when
    the run came from batkube-py) or a single Batsim jobs CSV. Writes metrics.json, metrics.csv and PNG +
    SVG figures: job_gantt (each platform resource a row, nodes in natural order, jobs sharing it in
    lanes), node_gantt (each node a lane as high as its allocatable cpu, running pods stacked by cpu
    request so the stack is the allocation; red = above allocatable, hatched = over-allocated),
    utilisation (cpu and queue length at the end of each simulated instant), waiting_time (fraction of
    jobs per bin, and CDF), and unschedulable_reasons when decisions were recorded.

    \b
    Definitions:
      mean/median/p95/max waiting time, turnaround and slowdowns are over started
        (non-rejected) jobs, as in the thesis tables;
      batsim_mean_* divide the same sums by all jobs, rejected included, and equal
        Batsim's out_schedule.csv mean_*;
      slowdown = turnaround / execution (Batsim's stretch); bounded slowdown uses --bsld-tau;
      makespan = max finish time; throughput = finished jobs per hour over
        [first submission, makespan];
      cpu_utilisation = requested cpu of running pods / allocatable cpu, time-weighted over
        [first submission, makespan] (above 1 when over-allocated);
      host_utilisation = fraction of host-time with at least one job (shared hosts counted once);
      *_over_allocations = times a node went over its cpu / memory / pod capacity;
      fragmented_core_seconds, mean_fragmented_cores, fragmentation = free cores no pending
        pod group can use (docs/gangs.md).
    """
    with _user_errors(f"analysing {run_dir}"):
        if out is None:
            out = run_dir / "analysis" if run_dir.is_dir() else run_dir.parent / f"{run_dir.stem}_analysis"
        with _progress(7 if not no_figures else 2, quiet) as step:
            step("loading")
            run = attach_platform(load_run(run_dir), platform, workload)
            step("metrics")
            metrics = compute_metrics(run, bsld_tau)
            if not no_figures:
                render_all(run, metrics, out, step)
            note = clock_note(metrics, run.summary, any(n.startswith("partial run") for n in run.notes))
            metrics["notes"] = list(dict.fromkeys([*run.notes, *([note] if note else [])]))
            write_metrics(metrics, out)
        if run.schedule is not None:
            for key, (ours, batsim) in check_against_schedule(metrics, run.schedule).items():
                click.echo(f"warning: {key} = {ours} but out_schedule.csv says {batsim}", err=True)
        if not quiet:
            for key in SUMMARY_KEYS:
                if metrics.get(key) is not None:
                    click.echo(f"{key:28s} {_fmt(metrics[key])}")
            for note in metrics["notes"]:
                click.echo(f"note: {note}")
            click.echo(f"written to {out}")


@click.command("compare")
@click.argument("inputs", nargs=-1)
@click.option(
    "-l",
    "--labels",
    multiple=True,
    help="Labels of the positional INPUTS, in order (comma-separated or repeated).",
)
@click.option(
    "-g",
    "--group",
    "groups",
    nargs=2,
    multiple=True,
    metavar="LABEL PATH_OR_GLOB",
    help="Add runs to the group LABEL; repeat (same LABEL merges) for several patterns.",
)
@click.option(
    "-f",
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "csv"]),
    default="text",
    show_default=True,
    help="Format of the table printed on stdout.",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write comparison.txt/.md/.csv and overlay figures (PNG, SVG) here.",
)
@click.option(
    "-m",
    "--metric",
    "metric_keys",
    multiple=True,
    help="Metrics to show (repeatable) [default: makespan, waiting times, slowdowns, "
    "utilisation, job counts].",
)
@click.option("--digits", type=click.IntRange(0, 9), default=1, show_default=True, help="Decimals shown.")
@click.option(
    "--bsld-tau",
    type=click.FloatRange(min=0.0, min_open=True),
    default=10.0,
    show_default=True,
    help="Bounded slowdown's threshold (s): max(1, (wait + run) / max(run, tau)).",
)
@click.option(
    "--workload",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The runs' workload: each job's `queue` names its LocalQueue, for per-queue waits and Jain's "
    "index in every run, Kueue or not [default: a Kueue run's own pods.csv].",
)
@click.option(
    "--queues",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="With --workload: the queues file giving each LocalQueue's ClusterQueue.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def compare(
    inputs: tuple[str, ...],
    labels: tuple[str, ...],
    groups: tuple[tuple[str, str], ...],
    fmt: str,
    out: Path | None,
    metric_keys: tuple[str, ...],
    digits: int,
    bsld_tau: float,
    workload: Path | None,
    queues: Path | None,
    quiet: bool,
) -> None:
    """Compare runs side by side: metrics as mean ± sd per group, with differences to the first group.

    Each positional INPUT is one group: a run directory, a Batsim jobs CSV (thesis runs with extra
    scheduled/pulling/pulled/created columns work) or a quoted glob whose matches are repetitions.
    --group LABEL PATH_OR_GLOB names a group directly. sd is the population sd (ddof=0), as in the
    thesis's Table 4.1; a group of one run shows its value alone.

    Per queue (docs/concepts/queues.md): each ClusterQueue's and LocalQueue's mean and max wait
    (`mean_waiting_time[cluster_queue=NAME]`, `max_waiting_time[queue=NAME]`), the worst LocalQueue's
    mean wait and Jain's fairness index (sum x)^2 / (n sum x^2) over the queues' mean waits and mean
    bounded slowdowns (1: all alike; 1/n: one queue bears all the waiting). The queues are a Kueue
    run's own, or for every run those --workload and --queues assign, so a run without Kueue is cut
    the same way.

    \b
    Examples:
      batkube compare runs/fcfs runs/binpack --labels fcfs,binpack
      batkube compare 'emulated/200_delay170_*_jobs.csv' 'batkube-simulated/200_delay170_simu_*_jobs.csv' \\
          --labels emulated,batkube
      batkube compare --group emulated 'emulated/200_delay170_*_jobs.csv' \\
          --group batkube 'batkube-simulated/200_delay170_simu_*_jobs.csv' -f markdown -o cmp/
    """
    label_list = [x.strip() for item in labels for x in item.split(",") if x.strip()]
    with _user_errors("comparing runs"):
        plan = cmp.plan_groups(list(inputs), label_list, list(groups))
        unknown = [k for k in metric_keys if not cmp.is_known(k)]
        if unknown:
            raise AnalysisError(
                f"unknown metric(s) {', '.join(unknown)}; known: {', '.join(cmp.KNOWN_METRICS)} and the "
                "per-queue ones (see --help)"
            )
        if queues is not None and workload is None:
            raise AnalysisError("--queues maps the LocalQueues --workload's jobs name: give --workload too")
        tenancy = tenants.from_inputs(workload, queues) if workload is not None else None
        total = sum(len(paths) for _, paths in plan) + (1 if out else 0)
        with _progress(total, quiet) as step:
            loaded = cmp.load_groups(plan, bsld_tau, step, tenancy)
            agg = cmp.aggregate(loaded, cmp.metric_keys(loaded, tuple(metric_keys)))
            if out is not None:
                step("figures")
                cmp.write_outputs(loaded, agg, out, digits)
        wide = cmp.wide_table(agg, digits)
        text = {"text": cmp.text_table, "markdown": cmp.markdown_table}.get(fmt)
        click.echo(text(wide) if text else cmp.csv_table(agg), nl=False)
        if out is not None and not quiet:
            click.echo(f"written to {out}", err=True)
