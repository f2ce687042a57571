"""The `batkube experiment` command group (heavy imports happen inside the commands, so that `batkube run`
does not pay for pandas, matplotlib or dask)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click


def _vars(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--var")
        # a relative path given on the command line is relative to where the user is, not to the file
        p = Path(value)
        out[name] = str(p.resolve()) if not p.is_absolute() and p.exists() else value
    return out


def _command(file: str, **options: object) -> str:
    """The command line as the user could retype it (recorded in report.md next to the numbers)."""
    argv = ["batkube", "experiment", "run", str(file)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        for v in value if isinstance(value, tuple) else (value,):
            if v is not None:
                argv += [flag, str(v)]
    return shlex.join(argv)


@click.group("experiment")
def experiment() -> None:
    """Declarative experiments (packaged, or YAML files): list, check, run, resume, tabulate, plot."""


def _locate(name_or_path: str) -> Path:
    from batkube_py.experiments.spec import SpecError, locate

    try:
        return locate(name_or_path)
    except SpecError as exc:
        raise click.ClickException(str(exc)) from None


@experiment.command("list")
def list_cmd() -> None:
    """The experiments packaged with batkube-py (run one with `batkube experiment run NAME`)."""
    from batkube_py.experiments.spec import packaged

    for name, path in packaged().items():
        click.echo(f"{name:10} {path}")


@experiment.command("run")
@click.argument("file", metavar="NAME|FILE")
@click.option(
    "--out",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Campaign directory [default: runs/experiments/NAME].",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Runs at once (local pool or LocalCluster workers) [default: CPU count].",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="local process pool, or Dask distributed (a LocalCluster unless --dask-scheduler).",
)
@click.option(
    "--dask-scheduler",
    "address",
    default=None,
    metavar="ADDRESS",
    help="A running Dask scheduler (tcp://host:8786); workers need the same paths.",
)
@click.option("--batsim", default=None, help="Batsim executable for every run (default: `batsim` on PATH).")
@click.option(
    "--repetitions",
    "-r",
    type=click.IntRange(min=1),
    default=None,
    help="Override the file's repetitions (e.g. 1 for a quick check).",
)
@click.option("--variant", "variants", multiple=True, help="Only this variant (repeatable).")
@click.option("--case", "cases", multiple=True, help="Only this case (repeatable).")
@click.option(
    "--var",
    "var_items",
    multiple=True,
    metavar="NAME=VALUE",
    help="Set a ${NAME} variable of the file (e.g. shared=/data/shared).",
)
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a terminal).")
def run_cmd(
    file, out, jobs, executor, address, batsim, repetitions, variants, cases, var_items, progress
) -> None:
    """Run an experiment (a packaged one by NAME: burst, spaced, kit, table41, sweeps, scale; or a YAML
    FILE), resuming finished runs, then write its tables and figures.

    Outputs in OUT: runs/<case>/<variant>/rep<i>/ (every run), runs.csv, table.md, report.md,
    <case>/comparison.* and figures, sweeps/*.csv|png|svg. Exits non-zero if a run failed
    (unless the variant says failures_expected, as the min-delay sweep does).
    """
    from batkube_py.experiments.executors import ExecutorUnavailable
    from batkube_py.experiments.runner import ExperimentError, Options, run_experiment
    from batkube_py.experiments.spec import SpecError
    from batkube_py.runs.batsim import exit_on_sigterm

    exit_on_sigterm()  # the run in progress is stopped with the runner (worker.py), not left behind
    path = _locate(file)

    opts = Options(
        out=out,
        executor=executor,
        address=address,
        batsim=batsim,
        repetitions=repetitions,
        variants=variants,
        cases=cases,
        overrides=_vars(var_items),
        progress=sys.stderr.isatty() if progress is None else progress,
        command=_command(
            file,
            out=out,
            jobs=jobs,
            executor=None if executor == "local" else executor,
            dask_scheduler=address,
            batsim=batsim,
            repetitions=repetitions,
            variant=variants,
            case=cases,
            var=var_items,
        ),
    )
    if jobs is not None:
        opts.jobs = jobs
    try:
        outcome = run_experiment(path, opts)
    except (SpecError, ExperimentError, ExecutorUnavailable) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(outcome.table, nl=False)
    for note in outcome.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"written to {(opts.out or outcome.files[0].parent)}", err=True)
    if outcome.failed:
        for task, err in outcome.failed:
            click.echo(f"FAILED {task.name}: {err}", err=True)
        raise click.ClickException(f"{len(outcome.failed)} run(s) failed; run the same command to retry them")


@experiment.command("check")
@click.argument("files", nargs=-1, required=True, metavar="NAME|FILE...")
@click.option(
    "--var", "var_items", multiple=True, metavar="NAME=VALUE", help="Set a ${NAME} variable of the files."
)
def check_cmd(files, var_items) -> None:
    """Validate experiments (packaged NAMEs or FILEs) without running anything (names the file and field
    at fault)."""
    from batkube_py.experiments.spec import SpecError, load, locate

    failed = False
    for f in files:
        try:
            exp = load(locate(f), _vars(var_items))
        except SpecError as exc:
            click.echo(str(exc), err=True)
            failed = True
            continue
        n = sum(len(v.sweep.values) if v.sweep else 1 for c in exp.cases for v in exp.variants_of(c))
        click.echo(f"{f}: {len(exp.cases)} case(s), {n} configuration(s) × {exp.repetitions} repetition(s)")
    if failed:
        sys.exit(1)
