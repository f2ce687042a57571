"""``swf-tools``: from a Parallel Workloads Archive trace to a workload batkube can run, in one tool."""

from __future__ import annotations

import functools
import json
import math
import textwrap
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table

from batkube_py.cli.util import CONTEXT, out_option
from swf_tools import nodes, queues
from swf_tools.convert import ConvertOptions, convert
from swf_tools.errors import ConversionError, SwfError
from swf_tools.extract import extract_period, find_periods
from swf_tools.stats import trace_info
from swf_tools.swf import SwfTrace, parse_swf, write_swf
from swf_tools.units import parse_duration, parse_memory

F = TypeVar("F", bound=Callable[..., Any])
console = Console(stderr=True, highlight=False)


class Duration(click.ParamType):
    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            seconds = float(value) if isinstance(value, int | float) else parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"expected a positive, finite duration, got {value!r}", param, ctx)
        return seconds


class MemoryQuantity(click.ParamType):
    name = "quantity"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            return parse_memory(str(value)) // 1024
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


_UNEXPECTED = (ValueError, KeyError, TypeError, IndexError, ArithmeticError, RecursionError, MemoryError)


def _user_errors(func: F) -> F:
    """Every expected failure becomes a one-paragraph message and exit code 1, never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except SwfError as exc:
            raise click.ClickException(str(exc)) from exc
        except OSError as exc:
            raise click.ClickException(f"{exc.filename or ''}: {exc.strerror or exc}") from exc
        except _UNEXPECTED as exc:
            # a trace whose values no check above anticipated: still one line, naming what broke
            why = f"{type(exc).__name__}: {str(exc)[:200]}"
            raise click.ClickException(f"unusable trace content ({why})") from None

    return wrapper  # type: ignore[return-value]


def _load(trace: Path, strict: bool) -> SwfTrace:
    parsed = parse_swf(trace, strict=strict)
    if len(parsed.jobs) == 0:
        raise click.ClickException(f"{trace}: no job in the trace (only comments, blank or malformed lines)")
    if parsed.malformed:
        first = parsed.malformed[0].describe(trace)
        console.print(f"[yellow]warning:[/] skipped {len(parsed.malformed)} malformed line(s); "
                      f"first: {first} (use --strict to fail on them)")
    return parsed


TRACE = click.argument("trace", type=click.Path(exists=True, dir_okay=False, path_type=Path))
STRICT = click.option("--strict", is_flag=True, help="Fail on malformed lines instead of skipping them.")
MAX_PROCS = click.option("--max-procs", type=click.IntRange(min=1), default=None,
                         help="Machine size, when the MaxProcs header is missing or wrong.")


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="batkube-py")
def main() -> None:
    """Prepare Parallel Workloads Archive (SWF) traces for batkube / Batsim experiments."""


@main.command()
@TRACE
@STRICT
@MAX_PROCS
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON on stdout.")
@_user_errors
def info(trace: Path, strict: bool, max_procs: int | None, as_json: bool) -> None:
    """Summarise TRACE: jobs, span, MaxProcs, utilisation, size and runtime distributions."""
    summary = trace_info(_load(trace, strict), max_procs)
    if as_json:
        click.echo(json.dumps(asdict(summary) | {"span": summary.span}, indent=2))
        return
    out = Console(highlight=False)
    table = Table(title=str(trace), show_header=False)
    table.add_row("jobs", f"{summary.jobs}" + (f" ({summary.malformed} malformed lines skipped)"
                                                  if summary.malformed else ""))
    table.add_row("span", f"{summary.span:.0f} s ({summary.span / 86400:.2f} days), "
                          f"first submit {summary.first_submit:.0f} → last end {summary.last_end:.0f}")
    table.add_row("MaxProcs", f"{summary.max_procs_header} (header), {summary.max_procs_used} (largest job)")
    util = "n/a (no MaxProcs)" if summary.utilisation is None else f"{summary.utilisation:.3f}"
    table.add_row("utilisation", util)
    table.add_row("runtime 0 / missing", f"{summary.zero_runtime} / {summary.missing_runtime}")
    for key, value in summary.header.items():
        table.add_row(f"header {key}", value)
    out.print(table)
    sizes = Table("job size (procs)", "jobs", title="size distribution")
    for bucket, count in summary.sizes.items():
        sizes.add_row(bucket, str(count))
    out.print(sizes)
    runtimes = Table("runtime (s, > 0)", "value", title="runtime distribution")
    for label, value in summary.runtime_quantiles.items():
        runtimes.add_row(label, f"{value:.1f}")
    out.print(runtimes)
    statuses = Table("status", "jobs", title="status")
    for label, count in summary.status.items():
        statuses.add_row(label, str(count))
    out.print(statuses)


@main.command()
@TRACE
@click.option("--period", type=Duration(), required=True, help="Period length: 10h, 36000, 1h30m.")
@click.option("--utilization", "--utilisation", "utilisation", type=click.FloatRange(0, min_open=True),
              required=True, help="Wanted mean utilisation (fraction of MaxProcs), e.g. 0.8.")
@click.option("--variation", type=click.FloatRange(0), default=0.01, show_default=True,
              help="Accepted distance from --utilization.")
@click.option("--seed", type=int, default=None,
              help="Try 50 random period starts (evalys' randomize mode) seeded with N instead of a grid.")
@click.option("--index", type=click.IntRange(min=0), default=0, show_default=True,
              help="Which of the matching periods to write (0 = first).")
@click.option("--merge", type=click.Choice(["none", "basic", "change-submit-times"]), default="none",
              show_default=True, help="Also keep jobs queued/running at the period start (evalys' merges).")
@click.option("--rebase", is_flag=True, help="Shift submit times so the period starts at 0.")
@MAX_PROCS
@STRICT
@out_option("SWF file to write.", dir_okay=False, required=True)
@_user_errors
def extract(trace: Path, period: float, utilisation: float, variation: float, seed: int | None, index: int,
            merge: str, rebase: bool, max_procs: int | None, strict: bool, out: Path) -> None:
    """Write one period of TRACE whose mean utilisation is within --variation of --utilization.

    TRACE is a Standard Workload Format log from the Parallel Workloads Archive, e.g. the NASA iPSC/860 log
    that the `scale` experiment reads. Example, a 10-hour window at 80 % utilisation:

    \b
      curl -O https://www.cs.huji.ac.il/labs/parallel/workload/l_nasa_ipsc/NASA-iPSC-1993-3.1-cln.swf.gz
      gunzip NASA-iPSC-1993-3.1-cln.swf.gz
      swf-tools extract NASA-iPSC-1993-3.1-cln.swf --period 10h --utilization 0.8 -o nasa-10h-80.swf
    """
    if period <= 0:
        raise click.BadParameter("must be > 0", param_hint="--period")
    parsed = _load(trace, strict)
    with console.status("searching periods (evalys)…"):
        search = find_periods(parsed, period, utilisation, variation, seed, max_procs)
    if not search.periods:
        raise click.ClickException(
            f"no {period / 3600:g} h period of {trace} has a mean utilisation of {utilisation:g} ± "
            f"{variation:g} ({search.candidates} candidates tried); widen --variation, try --seed, or change "
            "--period")
    table = Table("#", "begin (s)", "end (s)", "utilisation", "evalys", "jobs submitted",
                  title=f"{len(search.periods)} matching period(s) of {search.candidates} tried")
    for i, found in enumerate(search.periods):
        table.add_row(str(i), f"{found.begin:.0f}", f"{found.end:.0f}", f"{found.utilisation:.4f}",
                      f"{found.evalys_utilisation:.4f}", str(found.nb_jobs))
    console.print(table)
    if search.rejected_by_check:
        console.print(f"[yellow]warning:[/] {search.rejected_by_check} evalys period(s) dropped: their "
                      "re-measured utilisation is outside the asked range")
    if index >= len(search.periods):
        raise click.ClickException(f"--index {index}: only {len(search.periods)} matching period(s)")
    chosen = search.periods[index]
    header, jobs = extract_period(parsed, chosen, merge, rebase, (utilisation, variation))  # type: ignore[arg-type]
    if jobs.empty:
        raise click.ClickException(f"period {index} has no job to write; pick another --index or "
                                   "--merge basic")
    write_swf(out, header, jobs)
    console.print(f"wrote {len(jobs)} jobs of period {index} (utilisation {chosen.utilisation:.4f}) "
                  f"to {out}")


@main.command(name="convert")
@TRACE
@out_option("Batsim JSON workload to write.", dir_okay=False, required=True)
@click.option("--normalize-cpu", type=float, default=None,
              help="cpu = N × procs / largest job's procs (node cores).")
@click.option("--normalize-against", type=click.Choice(["max-job", "max-procs"]), default="max-job",
              show_default=True, help="Divide by the largest kept job (thesis) or by the MaxProcs header.")
@click.option("--uniform-cpu", type=float, default=None, help="Every job asks for this cpu.")
@click.option("--cpu-headroom", type=float, default=0.0, show_default=True,
              help="Cap cpu at N − H: Kubernetes will not place a pod using a whole node.")
@click.option("--min-cpu", type=float, default=0.001, show_default=True, help="Floor (Kubernetes' 1m).")
@click.option("--max-duration", type=Duration(), default=None, help="Trim delays to this (3600, 1h).")
@click.option("--memory-from", type=click.Choice(["none", "used", "requested"]), default="none",
              show_default=True, help="Memory request from SWF used (7) or requested (10) memory × procs.")
@click.option("--normalize-memory", type=MemoryQuantity(), default=None,
              help="Scale memory so the largest job asks for this quantity (e.g. 4Gi).")
@click.option("--scheduler", default="default", show_default=True, help="Profile 'scheduler' name.")
@click.option("--walltime-factor", type=float, default=None, help="walltime = F × delay (default: none).")
@click.option("--keep-ids/--renumber", default=True, show_default=True,
              help="Keep SWF job numbers as ids, or renumber 0..n-1 in submit order.")
@click.option("--jobs-from-time", type=float, default=None,
              help="Skip jobs submitted before this SWF time (seconds, trace clock).")
@click.option("--nb-res", type=int, default=1, show_default=True, help="Workload nb_res.")
@click.option("--cores-per-node", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Keep node counts: a job on P procs becomes a pod group of ceil(P / N) pods, each asking "
                   "its share of P (default: flatten each job into one pod).")
@click.option("--platform", "platform", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="Keep node counts, with the cores per node of this batkube platform.")
@click.option("--one-pod-per-node", is_flag=True, help="Each pod of a group on a node of its own.")
@click.option("--group-policy", type=click.Choice(["gang", "basic"]), default="gang", show_default=True,
              help="A group's PodGroup policy: gang (all pods at once) or basic (pods bind one by one, "
                   "holding their nodes; the job starts when the last is bound).")
@click.option("--queue-from", type=click.Choice(list(queues.SOURCES)), default=None,
              help="Give each job a Kueue LocalQueue (`queue`) named after this SWF field (user-3, group-1, "
                   "...) and write a matching queues file: " + queues.QUOTA_RULE + ".")
@click.option("--cluster-queue-from", type=click.Choice(list(queues.SOURCES)), default=None,
              help="One ClusterQueue per value of this field instead (e.g. users' LocalQueues in their "
                   "groups' ClusterQueues) [default: --queue-from].")
@click.option("--queueing-strategy", type=click.Choice(list(queues.STRATEGIES)), default="BestEffortFIFO",
              show_default=True, help="The ClusterQueues' queueingStrategy.")
@click.option("--fair-sharing", is_flag=True,
              help="With --queue-from: " + queues.FAIR_SHARING_RULE + ".")
@click.option("--quota-cores", type=click.IntRange(min=1), default=None,
              help="Cores the quotas share out [default: the --platform's compute cores].")
@click.option("--queues-out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Queues file to write [default: beside OUT, OUT's name with .queues.yaml].")
@click.option("--indent", type=click.IntRange(min=0), default=None, help="Pretty-print the JSON.")
@STRICT
@_user_errors
def convert_command(trace: Path, out: Path, normalize_cpu: float | None, normalize_against: str,
                    uniform_cpu: float | None, cpu_headroom: float, min_cpu: float,
                    max_duration: float | None,
                    memory_from: str, normalize_memory: int | None, scheduler: str,
                    walltime_factor: float | None, keep_ids: bool, jobs_from_time: float | None, nb_res: int,
                    cores_per_node: float | None, platform: Path | None, one_pod_per_node: bool,
                    group_policy: str, queue_from: str | None, cluster_queue_from: str | None,
                    queueing_strategy: str, fair_sharing: bool, quota_cores: int | None,
                    queues_out: Path | None,
                    indent: int | None, strict: bool) -> None:
    """Convert TRACE into a Batsim 4.2.1 delay workload (nb_res, jobs, profiles) for batkube.

    With --queue-from, each job names a Kueue LocalQueue and a queues file for `batkube run --queues`
    is written beside the workload (docs/tutorials/swf-trace.md), e.g. NASA iPSC's users as LocalQueues
    in their groups' ClusterQueues on 128 nodes:

    \b
      swf-tools convert NASA-iPSC-1993-3.1-cln.swf --cores-per-node 1 --queue-from user \\
          --cluster-queue-from group --quota-cores 128 -o nasa.json     # and nasa.queues.yaml
    """
    if platform is not None:
        if cores_per_node is not None:
            raise ConversionError("--cores-per-node and --platform are mutually exclusive")
        cores_per_node = nodes.cores_per_node(platform)
        if queue_from is not None and quota_cores is None:
            quota_cores = int(nodes.total_cores(platform))
    options = ConvertOptions(
        normalize_cpu=normalize_cpu, uniform_cpu=uniform_cpu, normalize_against=normalize_against,  # type: ignore[arg-type]
        cpu_headroom=cpu_headroom, min_cpu=min_cpu, max_duration=max_duration,
        memory_from=memory_from, normalize_memory_kib=normalize_memory,  # type: ignore[arg-type]
        scheduler=scheduler, walltime_factor=walltime_factor, keep_ids=keep_ids,
        jobs_from_time=jobs_from_time, nb_res=nb_res, cores_per_node=cores_per_node,
        one_pod_per_node=one_pod_per_node, group_policy=group_policy, queue_from=queue_from,
        cluster_queue_from=cluster_queue_from, queueing_strategy=queueing_strategy, quota_cores=quota_cores,
        fair_sharing=fair_sharing)
    options.validate()
    parsed = _load(trace, strict)
    workload, report = convert(parsed, options)
    out.write_text(workload.to_json(indent) + "\n", encoding="utf-8")
    if report.queue_plan is not None:
        queues_out = queues_out or out.with_name(out.stem + ".queues.yaml")
        _write_queues(report.queue_plan, queues_out, trace, options)
    console.print(f"wrote {out}: {report.kept} jobs, {len(workload.profiles)} profiles "
                  f"({report.total} in trace, {report.nb_skipped} skipped)")
    for reason, count in report.skipped.most_common():
        console.print(f"  skipped {count}: {reason}")
    if report.cpu_reference is not None:
        console.print(f"  cpu normalised against {report.cpu_reference:g} procs; "
                      f"{report.capped} capped at {options.cpu_cap:g}")
    if cores_per_node is not None:
        console.print(f"  node counts kept ({cores_per_node:g} cores per node): {report.groups} jobs are "
                      "pod groups (res > 1)")
    if report.trimmed:
        console.print(f"  {report.trimmed} delays trimmed to {max_duration:g} s")
    if report.without_memory:
        console.print(f"  {report.without_memory} jobs have no memory value: no memory request")


def _write_queues(plan: queues.QueuePlan, path: Path, trace: Path, options: ConvertOptions) -> None:
    by = options.cluster_queue_from or options.queue_from
    header = [f"Kueue v1beta2 objects for `batkube run --queues`, written by swf-tools convert from "
              f"{trace.name}:",
              f"one LocalQueue per {options.queue_from}, one ClusterQueue per {by}, all in cohort "
              f"{queues.COHORT!r}, {plan.strategy}.", f"Quotas of {plan.cores} cores: {queues.QUOTA_RULE}."]
    if plan.fair_sharing:
        header.append(f"Fair sharing: {queues.FAIR_SHARING_RULE}.")
    if plan.split:
        header.append(f"{len(plan.split)} {options.queue_from}(s) span several {by}s: one LocalQueue per "
                      "pair.")
    lines = textwrap.wrap(" ".join(header), 104, break_on_hyphens=False)
    path.write_text(queues.render(plan, lines), encoding="utf-8")
    quota = ", ".join(f"{cq} {q}" for cq, q in plan.quotas.items())
    fair = ", fair sharing" if plan.fair_sharing else ""
    console.print(f"wrote {path}: {len(plan.local_queues)} LocalQueues, {len(plan.quotas)} ClusterQueues in "
                  f"cohort {queues.COHORT!r} ({plan.strategy}{fair}; cpu quotas of {plan.cores} cores: "
                  f"{quota})")
    if plan.split:
        console.print(f"  {', '.join(plan.split)}: jobs in several {by}s, one LocalQueue per {by}")
