"""The `batkube` command line."""

from __future__ import annotations

import csv
import gc
import importlib
import json
import os
import sys
from pathlib import Path

# The imports below build about a million objects (the Kubernetes client's models) that live as long as
# the process: collecting in the middle of them is wasted start-up time (~0.1 s of ~1 s).
gc.disable()
try:
    import click

    from batkube_py import __version__
    from batkube_py.cli.examples import NOTES, InputFile
    from batkube_py.cli.params import MAX_JOBS, MAX_NODES, SECONDS, Finite, guard_options
    from batkube_py.cli.util import CONTEXT, Quantity, fixed, out_option, short_help_everywhere
    from batkube_py.controlplane.cli import apiserver_config, backend_options, controlplane
    from batkube_py.experiments.commands import experiment
    from batkube_py.inputs import commworkload, platforms, workloads
    from batkube_py.runs import RunError, rundir
    from batkube_py.runs.batsim import exit_on_sigterm, interrupt_on_sigterm
    from batkube_py.runs.endpoint import FREE_LOOPBACK
    from batkube_py.runs.run import RunConfig, preflight, run, serve
finally:
    gc.enable()

_path = click.Path(path_type=Path)
_file = click.Path(exists=True, dir_okay=False, path_type=Path)


class _LazyGroup(click.Group):
    """Imports heavy subcommands (pandas, matplotlib, evalys) only when they run, so that `run` and
    `serve` start in a fraction of a second."""

    lazy = {
        "analyze": "batkube_py.analysis.commands:analyze",
        "compare": "batkube_py.analysis.commands:compare",
        "explain": "batkube_py.analysis.explain_view:explain",
        "replay": "batkube_py.runs.transcript:replay_cmd",
        "parity": "batkube_py.cli.parity:parity_cmd",
        "baseline": "batkube_py.cli.baseline:baseline_group",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy and name not in self.commands:
            module, _, attr = self.lazy[name].partition(":")
            self.add_command(short_help_everywhere(getattr(importlib.import_module(module), attr)), name)
        return super().get_command(ctx, name)


@click.group(cls=_LazyGroup, context_settings=CONTEXT)
@click.version_option(__version__, prog_name="batkube-py")
def main() -> None:
    """Kubernetes scheduling on Batsim-simulated clusters."""


def _report(summary: dict, out: Path | None) -> None:
    """The run's figures on success; on failure only what failed and what was kept, so that a stopped run
    cannot be mistaken for a finished one. Rejected jobs are pointed to, with the first one's reason."""
    if summary.get("error"):
        ended = summary.get("jobs_total", 0) - summary.get("jobs_unfinished", 0)
        raise click.ClickException(
            f"{summary['error']} — the run did not finish ({ended} of {summary.get('jobs_total', 0)} "
            "jobs ended); the outputs so far are kept, marked incomplete (INCOMPLETE, summary.json)"
        )
    keys = (
        "makespan",
        "mean_waiting_time",
        "jobs_total",
        "jobs_succeeded",
        "jobs_rejected",
        "over_allocations",
    )
    click.echo(" ".join(f"{k}={fixed(summary[k])}" for k in keys))
    if summary.get("jobs_rejected"):
        click.echo(f"batkube: {summary['jobs_rejected']} job(s) rejected: {_first_rejection(out)}", err=True)


def _first_rejection(out: Path | None) -> str:
    if out is None:
        return "run with -o DIR to keep rejected.csv, which says why"
    try:
        with open(out / "rejected.csv", newline="") as f:
            row = next(csv.DictReader(f))
    except (OSError, StopIteration):
        return f"see {out / 'rejected.csv'}"
    return (f"see {out / 'rejected.csv'} (first: job {row['job_id']}, {row['field']} = {row['value']}, "
            f"expected {row['expected']})")  # fmt: skip


def _transcript_option(f):
    return click.option(
        "--transcript", type=_path, default=None, metavar="FILE",
        help="Write every Batsim message and the reply sent, raw, one per line (for `batkube replay`).",
    )(f)  # fmt: skip


def _embedded_options(f):
    f = click.option(
        "--kube-version", "kube_version", type=click.Choice(["1.37", "1.32"]), default=None,
        help="The kube-scheduler release the twin follows: 1.37 (1.37.2, the default for --backend "
        "embedded) or 1.32 (1.32.6); see docs/versions.md.",
    )(f)  # fmt: skip
    f = click.option(
        "--startup-latency", "latency", default=None, metavar="SPEC",
        help="Delay between binding and start: fixed:S, uniform:A,B, exponential:MEAN, lognormal:MU,SIGMA, "
        "or k3s (fitted on the thesis's emulated runs). Default: none.",
    )(f)  # fmt: skip
    f = click.option(
        "--no-request", "no_request", type=click.Choice(["exclusive", "besteffort"]), default="exclusive",
        show_default=True,
        help="What a job without a cpu field (every standard Batsim workload) asks for: a whole node, as "
        "Batsim gives a job its host (exclusive), or nothing, a Kubernetes BestEffort pod (besteffort).",
    )(f)  # fmt: skip
    return click.option(
        "--record-decisions", "record", is_flag=True, help="Write decisions.jsonl: why each pod went where."
    )(f)


SEED_HELP = (
    "Seed of the run's random draws (with the embedded twin: same seed, same outputs). As 1.37 the twin "
    "draws from it the order its parallel Filter workers (`parallelism`, default 16) find the nodes in, "
    "which decides the tied node that wins; with `parallelism: 1` its ties take no draw. As 1.32 it draws "
    "the tied node itself. Both draw preemption's start offset, and --startup-latency its delays. The "
    "real kube-scheduler (--backend apiserver) makes its own random choices."
)


@main.command("run")
@click.option("--platform", "-p", type=InputFile(), required=True,
              help="SimGrid platform XML (README's platforms/... come with batkube-py when not here).")
@click.option("--workload", "-w", type=InputFile(), required=True,
              help="Batsim JSON workload (README's workloads/... come with batkube-py when not here).")
@click.option("--out", "-o", type=_path, required=True, help="Run directory for every output.")
@click.option("--seed", type=int, default=0, show_default=True, help=SEED_HELP)
@click.option("--batsim", default=None,
              help="Batsim executable, or `double` for the packaged Batsim 4.2.1 double "
              "(default: `batsim` on PATH, else the double).")
@click.option("--batsim-arg", "batsim_args", multiple=True, help="Extra argument for Batsim (repeatable).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when on a terminal).")
@click.option("--batsim-log", is_flag=True,
              help="Let Batsim log every message to batsim.stderr (default: Batsim runs with -q).")
@click.option("--queues", type=_file, default=None, metavar="FILE",
              help="Kueue v1beta2 objects (ClusterQueues, LocalQueues, ...): jobs name a LocalQueue with "
              "`queue` and are admitted by Kueue before they are scheduled (docs/concepts/queues.md).")
@click.option("--strict", is_flag=True,
              help="Refuse a workload whose jobs or profiles have fields nothing reads (a misspelt `cpus`); "
              "default: warn on the console, in batkube.log and in summary.json, and ignore them.")
@_transcript_option
@guard_options
@_embedded_options
@backend_options
def run_cmd(platform, workload, out, seed, batsim, batsim_args, progress, batsim_log, queues, strict,
            transcript,
            record, latency, no_request, kube_version, overwrite, connect_timeout, idle_timeout,
            **backend) -> None:  # fmt: skip
    """Simulate PLATFORM running WORKLOAD with Batsim and the embedded kube-scheduler twin."""
    cfg = RunConfig(
        platform=platform, workload=workload, out=out, seed=seed, batsim=batsim, batsim_args=batsim_args,
        progress=sys.stderr.isatty() if progress is None else progress, record_decisions=record,
        startup_latency=latency, scheduler_config=backend["scheduler_config"],
        connect_timeout=connect_timeout, idle_timeout=idle_timeout, transcript=transcript,
        batsim_log=batsim_log, no_request=no_request, queues=queues, strict=strict,
        notes=tuple(click.get_current_context().meta.get(NOTES, ())),
        **({"kube_version": kube_version} if kube_version else {}),
    )  # fmt: skip
    api_cfg = _api_config(backend, kube_version)
    if api_cfg is not None:
        api_cfg.queues = queues  # the real Kueue admits the jobs (docs/kueue.md)
    _report(run_claimed(cfg, api_cfg, overwrite), cfg.out)


def _api_config(backend: dict, kube_version: str | None):
    """The apiserver backend's settings; --kube-version, when given, also names the twin it paces with."""
    api_cfg = apiserver_config(backend)
    if api_cfg is not None and kube_version:
        api_cfg.kube_version = kube_version
    return api_cfg


def run_claimed(cfg: RunConfig, api_cfg, overwrite: bool) -> dict:
    """One `batkube run` (or `parity`) into its own run directory, with the backend's session around it."""
    interrupt_on_sigterm()
    try:
        checked = preflight(cfg)  # before the directory is claimed (and, with --overwrite, emptied)
        for line in checked.unknown:
            click.echo(f"batkube: warning: workload {cfg.workload}: {line}: ignored (--strict refuses it)",
                       err=True)  # fmt: skip
        with rundir.claimed(cfg.out, checked.inputs(cfg), overwrite):
            return _with_backend(api_cfg, cfg.out, lambda factory: run(cfg, factory, checked))
    except (RunError, rundir.RunDirError) as exc:
        raise click.ClickException(str(exc)) from None



def _with_backend(api_cfg, out, body):
    """Runs body(backend_factory); for --backend apiserver inside a session that always cleans up."""
    if api_cfg is None:
        return body(None)
    exit_on_sigterm()  # the session below then stops its control plane and removes the run's objects
    from batkube_py.controlplane.manager import ControlPlaneError
    from batkube_py.controlplane.session import apiserver_session

    try:
        with apiserver_session(api_cfg, out) as factory:
            return body(factory)
    except ControlPlaneError as exc:
        raise click.ClickException(str(exc)) from None


@main.command("serve")
@click.option(
    "--socket", "endpoint", default=FREE_LOOPBACK, show_default=True,
    help="ZeroMQ endpoint to bind (tcp://HOST:PORT or ipc://PATH); the default is a free loopback port, "
    "printed at start, so that no other Batsim on the host reaches this adapter by accident.",
)  # fmt: skip
@click.option("--out", "-o", type=_path, default=None, help="Directory for pods.csv, summary.json, ...")
@click.option("--seed", type=int, default=0, show_default=True, help=SEED_HELP)
@click.option("--idle-timeout", type=SECONDS, default=600.0, show_default=True,
              help="Give up after this many seconds without a message from Batsim.")  # fmt: skip
@click.option("--overwrite", is_flag=True, help="Replace the outputs of an earlier run in --out.")
@_transcript_option
@_embedded_options
@backend_options
def serve_cmd(endpoint, out, seed, idle_timeout, overwrite, transcript, record, latency, no_request,
              kube_version, **backend) -> None:  # fmt: skip
    """Run the adapter alone, for a Batsim you launch yourself (with --enable-compute-sharing, and
    --enable-dynamic-jobs --acknowledge-dynamic-jobs --enable-profile-reuse so that preempted pods are
    resubmitted, composed profiles included)."""
    config = backend["scheduler_config"]
    api_cfg = _api_config(backend, kube_version)
    version = {"kube_version": kube_version} if kube_version else {}

    def body(factory):
        return serve(endpoint, out, seed, idle_timeout, factory, record_decisions=record,
                     startup_latency=latency, scheduler_config=config,
                     transcript_path=transcript, no_request=no_request, **version)  # fmt: skip

    interrupt_on_sigterm()
    try:
        if out is None:
            summary = _with_backend(api_cfg, out, body)
        else:
            with rundir.claimed(out, {"scheduler config": config}, overwrite):
                summary = _with_backend(api_cfg, out, body)
    except (RunError, rundir.RunDirError) as exc:
        raise click.ClickException(str(exc)) from None
    _report(summary, out)


def _write(text: str, output: Path | None, what: str) -> None:
    """To stdout, or to the file with one line on stderr saying what was written where."""
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        click.echo(f"wrote {output}: {what}", err=True)
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror}") from None


@main.command("platform")
@click.option("--nodes", "-n", type=click.IntRange(1, MAX_NODES), required=True,
              help="Number of Kubernetes nodes.")
@click.option("--cores", "-c", type=Quantity("cpu"), default="1", show_default=True,
              help="CPU per node (a Kubernetes quantity > 0: 1, 6, 1500m).")
@click.option("--memory", "-m", type=Quantity("memory"), default=None,
              help="Memory per node, e.g. 4Gi (default: not modelled).")
@click.option("--pods", type=click.IntRange(1, 1_000_000), default=None,
              help="Max pods per node (default 110).")
@click.option("--prefix", default="node-", show_default=True, help="Node names: PREFIX0, PREFIX1, ...")
@click.option("--label", "labels", multiple=True, help="KEY=VALUE node label (repeatable).")
@click.option("--taints", default=None, help="key=value:Effect,... taints on every node.")
@click.option("--racks", type=click.IntRange(1, MAX_NODES), default=1, show_default=True,
              help="Racks (SimGrid clusters) to split the nodes into, joined by one backbone link.")
@click.option("--rack-bandwidth", default="1.25GBps", show_default=True,
              help="Bandwidth of the inter-rack backbone (SimGrid units: 125MBps, 10Gbps).")
@click.option("--rack-latency", default="500us", show_default=True,
              help="Latency of the inter-rack backbone (SimGrid units: 500us, 1ms).")
@click.option("--rack-label", default=platforms.RACK_LABEL, show_default=True,
              help="Node label (host property) whose value is the node's rack.")
@out_option("Platform XML to write (default: stdout).", dir_okay=False, default=None)
def platform_cmd(nodes, cores, memory, pods, prefix, labels, taints, racks, rack_bandwidth, rack_latency,
                 rack_label, out) -> None:
    """Write a SimGrid platform of NODES identical Kubernetes nodes (plus Batsim's master host), in one
    cluster or in RACKS clusters joined by a backbone (each node labelled with its rack)."""
    bad = [x for x in labels if "=" not in x]
    if bad:
        raise click.BadParameter(f"expected KEY=VALUE, got {bad[0]!r}", param_hint="--label")
    node_labels = dict(x.split("=", 1) for x in labels)
    try:
        if racks == 1:
            xml = platforms.cluster_platform(nodes, cores, memory, prefix=prefix, pods=pods,
                                             labels=node_labels, taints=taints)
        else:
            xml = platforms.rack_platform(racks, nodes, cores, memory, prefix=prefix, pods=pods,
                                          labels=node_labels, taints=taints, backbone_bw=rack_bandwidth,
                                          backbone_lat=rack_latency, rack_label=rack_label)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    mem = f", memory {memory}" if memory else ""
    where = f" in {racks} racks ({rack_label}), backbone {rack_bandwidth} / {rack_latency}"
    where = where if racks > 1 else ""
    _write(xml, out, f"{nodes} node(s) of {cores} cpu{mem}{where}, plus Batsim's master host")


@main.command("workload")
@click.argument("kind", type=click.Choice(["burst", "spaced"]))
@click.option("--jobs", "-n", type=click.IntRange(1, MAX_JOBS), default=200, show_default=True,
              help="Number of jobs (pods).")
@click.option("--delay", type=Finite(0, 1e9, low_open=True), default=170, show_default=True,
              help="Job duration (s).")  # fmt: skip
@click.option("--interval", type=Finite(0, 1e9), default=10, show_default=True,
              help="Seconds between spaced jobs.")  # fmt: skip
@click.option("--cpu", type=Quantity("cpu"), default="1", show_default=True, help="CPU request of each pod.")
@click.option("--memory", type=Quantity("memory"), default=None, help="Memory request of each pod.")
@click.option("--pods-per-job", type=click.IntRange(1, 100_000), default=1, show_default=True,
              help="Pods per job: above 1, each job is a gang (res = N, a PodGroup of minCount N).")
@click.option("--one-pod-per-node", is_flag=True, help="Each pod of a gang on a node of its own.")
@out_option("Batsim JSON workload to write (default: stdout).", dir_okay=False, default=None)
def workload_cmd(kind, jobs, delay, interval, cpu, memory, pods_per_job, one_pod_per_node, out) -> None:
    """Write the thesis's burst (all at t=0) or spaced (one every --interval s) delay workload."""
    try:
        doc = workloads.delay_jobs(
            jobs, delay, 0 if kind == "burst" else interval, cpu=cpu, memory=memory, pods=pods_per_job,
            one_pod_per_node=one_pod_per_node,
        )  # fmt: skip
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    last = doc["jobs"][-1]["subtime"]
    when = f"submitted from 0 to {fixed(float(last))} s" if last else "all submitted at 0 s"
    gangs = f" of {pods_per_job} pods each" if pods_per_job > 1 else ""
    what = f"{jobs} {kind} job(s){gangs} of {fixed(float(delay))} s, {when}"
    _write(json.dumps(doc, indent=1) + "\n", out, what)


@main.command("comm-workload")
@click.option("--shape", type=click.Choice(commworkload.SHAPES), required=True,
              help="gang; topology (with --group-topology); flat: one pod per job, a delay as long "
                   "as the ptask alone.")
@click.option("--jobs", "-n", type=click.IntRange(1, MAX_JOBS), default=100, show_default=True, help="Jobs.")
@click.option("--interval", type=Finite(0, 1e9, low_open=True), default=5, show_default=True,
              help="Mean seconds between arrivals (Poisson).")
@click.option("--min-res", type=click.IntRange(1, 100_000), default=2, show_default=True,
              help="Fewest hosts of a job.")
@click.option("--max-res", type=click.IntRange(1, 100_000), default=8, show_default=True,
              help="Most hosts of a job (uniform in between).")
@click.option("--cores", type=click.IntRange(1, 100_000), default=1, show_default=True,
              help="Cores per node: each pod asks a whole node (flat: R nodes' cores).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of sizes, work and arrivals.")
@click.option("--group-topology", default=None, help="Node label key for --shape topology.")
@click.option("--platform", type=_file, default=None,
              help="Platform whose first hosts time the flat delays (default: one generated rack).")
@out_option("Batsim JSON workload to write (default: stdout).", dir_okay=False, default=None)
def comm_workload_cmd(
    shape, jobs, interval, min_res, max_res, cores, seed, group_topology, platform, out
) -> None:
    """Write a communicating gang workload (parallel_homogeneous jobs on --min-res..--max-res hosts)."""
    try:
        doc = commworkload.comm_jobs(jobs, interval, min_res, max_res, cores, seed, shape, group_topology,
                                     None if platform is None else str(platform))  # fmt: skip
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    _write(json.dumps(doc, indent=1) + "\n", out, f"{jobs} {shape} job(s) on {min_res}-{max_res} hosts")


main.add_command(controlplane)
main.add_command(experiment)
short_help_everywhere(main)


def entry() -> None:
    """The `batkube` executable. When a command is done the process ends: the heap is frozen first so
    that the interpreter's last collection skips it (after a 10,000-pod run that sweep took ~0.2 s).

    An error no command anticipated still ends in one line and exit code 1; `batkube --debug ...` (or
    BATKUBE_DEBUG=1) shows the traceback."""
    debug = sys.argv[1:2] == ["--debug"] or bool(os.environ.get("BATKUBE_DEBUG"))
    if sys.argv[1:2] == ["--debug"]:
        del sys.argv[1]
    try:
        main()
    except (Exception, RecursionError, MemoryError) as exc:
        if debug:
            raise
        click.echo(f"batkube: error: {type(exc).__name__}: {str(exc)[:300]} (--debug shows where)", err=True)
        sys.exit(1)
    finally:
        gc.freeze()


if __name__ == "__main__":
    entry()
