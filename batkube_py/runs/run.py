"""`batkube run`: Batsim and the adapter side by side, a progress bar, and every output kept.

Whatever fails — Batsim missing or dying, a broken message, Ctrl-C — the other side is stopped
cleanly, what was computed stays on disk, and the exit status says why.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from batkube_py import __version__
from batkube_py.adapter import fields
from batkube_py.adapter.decision import BackendFactory, DecisionProcess
from batkube_py.adapter.norequest import NoRequest
from batkube_py.adapter.outputs import RunOutputs
from batkube_py.adapter.queuejobs import QueueJobs
from batkube_py.adapter.startup import LatencySpecError, StartupLatency, parse_latency
from batkube_py.cluster.admission import KueueAdmission
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.inputs import topology
from batkube_py.inputs.queues import QueuesConfig, QueuesError, load_queues
from batkube_py.kueue.record import ADMISSIONS_FILE, AdmissionRecorder
from batkube_py.protocol.codec import ProtocolError
from batkube_py.protocol.reply import ReplyRuleError
from batkube_py.runs import RunError
from batkube_py.runs.batsim import Terminated, batsim_command, describe, find_batsim, last_words, stop_process
from batkube_py.runs.endpoint import Endpoint, EndpointError, PeerGone
from batkube_py.runs.transcript import TranscriptWriter
from batkube_py.runs.usage import AdapterUsage, ChildUsage
from batkube_py.scheduler.config import ConfigError, build_profiles, default_config, load_config
from batkube_py.scheduler.queue import QueueConfig
from batkube_py.scheduler.record import DecisionRecorder
from batkube_py.scheduler.versions import DEFAULT_KUBE_VERSION, FULL_VERSION, KubeVersion

log = logging.getLogger(__name__)


@dataclass
class RunConfig:
    platform: Path
    workload: Path
    out: Path
    seed: int = 0
    batsim: str | None = None
    batsim_args: Sequence[str] = field(default_factory=tuple)
    progress: bool = True
    record_decisions: bool = False
    startup_latency: str | None = None
    scheduler_config: Path | None = None
    connect_timeout: float | None = 120.0  # s for Batsim to connect and send SIMULATION_BEGINS
    idle_timeout: float | None = 600.0  # s of Batsim's silence (alive, not waiting for us) before giving up
    transcript: Path | None = None  # every message and reply, raw (batkube_py.runs.transcript)
    batsim_log: bool = False  # Batsim's own log of every message (off: Batsim runs with -q)
    no_request: str = "exclusive"  # what a job without a cpu request asks for (norequest.py)
    strict: bool = False  # refuse a workload with job or profile fields nothing reads (adapter/fields.py)
    notes: Sequence[str] = ()  # choices made for the user before the run (an example input from the package)
    kube_version: KubeVersion = DEFAULT_KUBE_VERSION  # the kube-scheduler release the embedded twin follows
    queues: Path | None = None  # Kueue objects (--queues): jobs are admitted by Kueue (its twin, embedded)


@dataclass
class Checked:
    """What run() needs that can fail on bad input, computed before the run directory is touched."""

    total: int
    startup: StartupLatency | None
    batsim: list[str]
    queues: QueuesConfig | None = None
    default_queue: str | None = None  # the workload's top-level `queue`
    unknown: list[str] = field(default_factory=list)  # the workload's unknown fields, one line each

    def inputs(self, cfg: RunConfig) -> dict[str, Path | None]:
        return {"platform": cfg.platform, "workload": cfg.workload, "scheduler config": cfg.scheduler_config,
                "queues": cfg.queues}  # fmt: skip


def embedded_factory(
    seed: int, record: Path | None = None, config: Path | None = None,
    kube_version: KubeVersion = DEFAULT_KUBE_VERSION, queues: QueuesConfig | None = None,
) -> BackendFactory:  # fmt: skip
    """The default backend; `record` streams every scheduling decision to that JSON-lines file;
    `config` is a KubeSchedulerConfiguration (profiles, weights, args, backoff) as kube-scheduler
    `kube_version` (versions.py) takes it, and the twin follows that release; with `queues`, the Kueue
    twin admits the jobs first (cluster/admission.py)."""
    if queues is not None and (why := queues.twin_refusal()) is not None:
        raise RunError(why)
    try:
        sched = load_config(config, kube_version) if config is not None else default_config(kube_version)
    except ConfigError as exc:
        raise RunError(f"scheduler config {config}: {exc}") from None
    queue = QueueConfig(pod_initial_backoff=sched.pod_initial_backoff, pod_max_backoff=sched.pod_max_backoff,
                        kube_version=kube_version)  # fmt: skip

    def make(nodes):
        log.info("embedded twin follows kube-scheduler %s (--kube-version %s)", FULL_VERSION[kube_version],
                 kube_version)  # fmt: skip
        profiles = build_profiles(sched, seed)
        recorder = DecisionRecorder(record) if record else None
        cluster = EmbeddedCluster(nodes, seed=seed, profiles=profiles, queue_config=queue, recorder=recorder)
        if queues is None:
            return cluster
        log.info("jobs are admitted by batkube's twin of Kueue v0.17.0 (--queues %s)", queues.path)
        admission = KueueAdmission(cluster, queues)
        if record:  # the twin's admission reasoning, beside the scheduling decisions
            AdmissionRecorder(record.with_name(ADMISSIONS_FILE), admission.twin)
        return admission

    return make


def _latency(spec: str | None, seed: int) -> StartupLatency | None:
    try:
        return parse_latency(spec, seed)
    except LatencySpecError as exc:
        raise RunError(str(exc)) from None


def read_workload(workload: Path) -> dict[str, Any]:
    """The workload's JSON, checked to be one (Batsim reads it again: the adapter gets its jobs from
    Batsim's messages)."""
    try:
        doc = json.loads(workload.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise RunError(f"cannot read workload {workload}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise RunError(f"workload {workload} is not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise RunError(
            f"workload {workload} is not JSON: line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise RunError(f"workload {workload} is nested too deeply to be a Batsim workload") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        raise RunError(f"workload {workload}: expected an object with a 'jobs' array (Batsim workload)")
    if "queue" in doc and not isinstance(doc["queue"], str):
        raise RunError(f"workload {workload}: field 'queue' = {doc['queue']!r}: expected a LocalQueue name")
    return doc


def count_jobs(workload: Path) -> int:
    return len(read_workload(workload)["jobs"])


def load_queues_file(path: Path | None) -> QueuesConfig | None:
    try:
        return load_queues(path) if path is not None else None
    except QueuesError as exc:
        raise RunError(str(exc)) from None


def unknown_fields(workload: Path, doc: dict[str, Any], strict: bool) -> list[str]:
    """The workload's unknown job and profile fields, one line each; under --strict the first one is an
    error before anything starts."""
    lines = [u.message() for u in fields.unknown_fields(doc)]
    if lines and strict:
        more = f" (and {len(lines) - 1} more unknown field(s))" if len(lines) > 1 else ""
        raise RunError(f"workload {workload}: {lines[0]}{more}; --strict refuses fields nothing reads")
    return lines


def open_transcript(path: Path | None) -> TranscriptWriter | None:
    try:
        return TranscriptWriter(path) if path is not None else None
    except OSError as exc:
        raise RunError(f"cannot write transcript {path}: {exc.strerror}") from None


def setup_logging(out: Path) -> logging.Handler:
    handler = logging.FileHandler(out / "batkube.log", mode="w")
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("batkube_py")
    root.setLevel(logging.DEBUG if os.environ.get("BATKUBE_DEBUG") else logging.INFO)
    root.addHandler(handler)
    return handler


def _progress(enabled: bool, total: int) -> tuple[Progress, Callable[[DecisionProcess], None]]:
    bar = Progress(
        TextColumn("[bold]simulated t={task.fields[now]:>10.1f}s"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("jobs"),
        TimeElapsedColumn(),
        disable=not enabled,
        transient=False,
    )
    task = bar.add_task("run", total=total or None, now=0.0)
    last = [0.0]

    def update(process: DecisionProcess) -> None:
        t = time.monotonic()
        if t - last[0] > 0.1 or process.ended:
            last[0] = t
            bar.update(task, completed=process.jobs_done, now=process.now)

    return bar, update


def preflight(cfg: RunConfig) -> Checked:
    """Every check of the inputs that does not need the run directory (which is not touched)."""
    for what, path in (("platform", cfg.platform), ("workload", cfg.workload)):
        if not path.is_file():
            raise RunError(f"{what} file {path} does not exist")
    try:
        topology.read_platform(cfg.platform)
    except topology.PlatformError as exc:
        raise RunError(str(exc)) from None
    for what, value in (("--connect-timeout", cfg.connect_timeout), ("--idle-timeout", cfg.idle_timeout)):
        if value is not None and not 0 < value < float("inf"):
            raise RunError(f"{what} must be a positive number of seconds, got {value}")
    doc = read_workload(cfg.workload)
    queues = load_queues_file(cfg.queues)
    if queues is not None and (why := queues.afs_refusal()) is not None:
        raise RunError(why)  # on either backend (inputs/queues.py)
    unknown = unknown_fields(cfg.workload, doc, cfg.strict)
    return Checked(len(doc["jobs"]), _latency(cfg.startup_latency, cfg.seed), find_batsim(cfg.batsim), queues,
                   doc.get("queue"), unknown)  # fmt: skip


def platform_labels(platform: Path) -> dict[str, dict[str, str]]:
    """Topology labels of the platform's hosts (topology.py); none, said in the log, if unreadable."""
    try:
        return topology.host_labels(platform)
    except topology.PlatformError as exc:
        log.warning("no zone/cluster node labels: %s", exc)
        return {}


def run(
    cfg: RunConfig, backend_factory: BackendFactory | None = None, checked: Checked | None = None
) -> dict[str, Any]:
    """Run one simulation; returns the summary (also written to summary.json). Raises RunError.

    The caller owns the directory (rundir.claimed: the CLI); `checked` is preflight's result if done."""
    adapter_usage = AdapterUsage()
    checked = checked or preflight(cfg)
    total, startup, batsim = checked.total, checked.startup, checked.batsim
    record = cfg.out / "decisions.jsonl" if cfg.record_decisions else None
    backend_factory = backend_factory or embedded_factory(
        cfg.seed, record, cfg.scheduler_config, cfg.kube_version, checked.queues
    )
    try:
        cfg.out.mkdir(parents=True, exist_ok=True)
        handler = setup_logging(cfg.out)
        outputs = RunOutputs(cfg.out)
    except OSError as exc:
        raise RunError(f"cannot write in output directory {cfg.out}: {exc.strerror}") from None
    for line in cfg.notes:
        log.info("%s", line)
    for line in checked.unknown:
        log.warning("workload %s: %s: ignored", cfg.workload, line)
    try:
        transcript = open_transcript(cfg.transcript)
    except RunError:
        outputs.close()
        raise
    process = DecisionProcess(
        backend_factory, outputs, startup, NoRequest(cfg.no_request),  # type: ignore[arg-type]
        host_labels=platform_labels(cfg.platform), queues=QueueJobs(checked.queues, checked.default_queue),
    )
    endpoint = Endpoint()
    cmd = batsim_command(batsim, cfg, endpoint.address, cfg.out / "out")
    (cfg.out / "batsim_cmdline.txt").write_text(" ".join(cmd) + "\n")
    start = time.perf_counter()
    error: str | None = None
    interrupted = False
    with open(cfg.out / "batsim.stdout", "wb") as so, open(cfg.out / "batsim.stderr", "wb") as se:
        try:
            # a session of its own: stopping the run stops Batsim and anything it started, as one group
            proc = subprocess.Popen(
                cmd, stdout=so, stderr=se, stdin=subprocess.DEVNULL, cwd=cfg.out, start_new_session=True
            )
        except OSError as exc:
            endpoint.close()
            outputs.close()
            if transcript is not None:
                transcript.close()
            raise RunError(f"cannot start Batsim ({batsim[0]}): {exc.strerror}") from None
        batsim_usage = ChildUsage(proc)
        bar, update = _progress(cfg.progress, total)
        try:
            with bar:
                endpoint.serve(
                    process, peer_alive=batsim_usage.alive, on_reply=update,
                    idle_timeout=cfg.idle_timeout, connect_timeout=cfg.connect_timeout,
                    transcript=transcript.record if transcript is not None else None,
                )  # fmt: skip
            rc = batsim_usage.wait(timeout=120)
            if rc != 0:
                error = (
                    f"Batsim exited with code {rc} after the simulation ended (see {cfg.out}/batsim.stderr)"
                )
        except PeerGone as exc:
            rc = batsim_usage.poll()
            said = last_words(cfg.out / "batsim.stderr")
            error = f"{exc} (exit code {rc}{': ' + said if said else ''}; see {cfg.out}/batsim.stderr)"
        except (ProtocolError, ReplyRuleError) as exc:
            error = f"adapter stopped: {exc}"
        except Terminated as exc:
            error, interrupted = f"stopped by {exc}", True
        except KeyboardInterrupt:
            error, interrupted = "interrupted", True
        except subprocess.TimeoutExpired:
            error = "Batsim did not exit within 120 s after SIMULATION_ENDS"
        except Exception as exc:  # a bug: the run still ends cleanly, with the reason and every output
            log.exception("adapter error")
            error = f"adapter error: {type(exc).__name__}: {exc} (see {cfg.out}/batkube.log)"
        finally:
            batsim_usage.poll()
            stop_process(proc, group=True, wait=batsim_usage.wait)
            endpoint.close()
            outputs.close()
            process.queue_log.close()
            if transcript is not None:
                transcript.close()
            if process.backend is not None:
                process.backend.close(interrupted)
    if error is None and process.fatal is not None:
        error = process.fatal
    summary = process.summary()
    summary.update(
        error=error,
        wall_seconds=round(time.perf_counter() - start, 3),
        seed=cfg.seed,
        batsim_exit_code=proc.returncode,
        messages=endpoint.messages,
        **adapter_usage.figures(),
        **batsim_usage.figures(),
        batkube_version=__version__,
        platform=str(cfg.platform),
        workload=str(cfg.workload),
        **describe(batsim, cfg.out / "batsim.stderr"),
        unknown_fields=checked.unknown,
        input_notes=list(cfg.notes),
    )
    outputs.summary(summary)
    if error:
        log.error("%s", error)
    logging.getLogger("batkube_py").removeHandler(handler)
    handler.close()
    return summary


def serve(
    endpoint_address: str, out: Path | None, seed: int, idle_timeout: float | None,
    backend_factory: BackendFactory | None = None, *, record_decisions: bool = False,
    startup_latency: str | None = None, scheduler_config: Path | None = None,
    transcript_path: Path | None = None, no_request: str = "exclusive",
    kube_version: KubeVersion = DEFAULT_KUBE_VERSION,
) -> dict[str, Any]:  # fmt: skip
    """The adapter alone, for users who launch Batsim themselves; `idle_timeout` bounds both the wait
    for Batsim's first message and its silences. The endpoint is bound before `out` is written."""
    adapter_usage = AdapterUsage()
    startup = _latency(startup_latency, seed)
    if idle_timeout is not None and not 0 < idle_timeout < float("inf"):
        raise RunError(f"--idle-timeout must be a positive number of seconds, got {idle_timeout}")
    try:
        endpoint = Endpoint(endpoint_address)
    except EndpointError as exc:
        raise RunError(str(exc)) from None
    try:
        outputs = RunOutputs(out) if out is not None else None
    except OSError as exc:
        endpoint.close()
        raise RunError(f"cannot write in output directory {out}: {exc.strerror}") from None
    try:
        transcript = open_transcript(transcript_path)
    except RunError:
        endpoint.close()
        if outputs is not None:
            outputs.close()
        raise
    record = out / "decisions.jsonl" if out is not None and record_decisions else None
    factory = backend_factory or embedded_factory(seed, record, scheduler_config, kube_version)
    process = DecisionProcess(factory, outputs, startup, NoRequest(no_request))  # type: ignore[arg-type]
    print(f"batkube-py listening on {endpoint.address} (start Batsim with -s {endpoint.address})",
          file=sys.stderr, flush=True)  # fmt: skip
    start = time.perf_counter()
    error = None
    interrupted = False
    try:
        endpoint.serve(process, idle_timeout=idle_timeout, connect_timeout=idle_timeout,
                       transcript=transcript.record if transcript is not None else None)  # fmt: skip
    except (PeerGone, ProtocolError, ReplyRuleError) as exc:
        error = str(exc)
    except Terminated as exc:
        error, interrupted = f"stopped by {exc}", True
    except KeyboardInterrupt:
        error, interrupted = "interrupted", True
    except Exception as exc:  # a bug: end with the reason and the outputs so far
        log.exception("adapter error")
        error = f"adapter error: {type(exc).__name__}: {exc}"
    finally:
        endpoint.close()
        if outputs is not None:
            outputs.close()
        if transcript is not None:
            transcript.close()
        if process.backend is not None:
            process.backend.close(interrupted)
    summary = process.summary()
    summary.update(
        error=error or process.fatal, wall_seconds=round(time.perf_counter() - start, 3), seed=seed,
        **adapter_usage.figures(),
    )
    if outputs is not None:
        outputs.summary(summary)
    return summary
