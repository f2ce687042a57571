"""From an experiment to the list of runs: one `batkube run` command line per case × variant × sweep
value × repetition, each with its own directory and a key that says whether a finished run is still
valid (resume = skip the runs whose key matches)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from batkube_py.experiments.spec import Case, Experiment, Generated, SpecError, Sync, Variant


@dataclass(frozen=True)
class Task:
    case: str
    variant: str
    group: str
    param: str | None
    value: float | None
    rep: int
    seed: int
    out: Path
    argv: tuple[str, ...]
    key: str
    timeout: float | None = None
    exclusive: bool = False
    failures_expected: bool = False
    backend: str = "embedded"
    workload: Path | None = None
    queues: Path | None = None  # the variant's queues file (--queues)

    @property
    def name(self) -> str:
        point = f" {self.param}={self.value:g}" if self.param else ""
        return f"{self.case}/{self.variant}{point} rep {self.rep}"


def resolve(path: str, base: Path) -> Path:
    p = Path(os.path.expanduser(path))
    return p if p.is_absolute() else (base / p).resolve()


def _tool(name: str) -> str:
    """Console scripts of this environment first, so `swf-tools` is the one installed with batkube-py."""
    local = Path(sys.executable).parent / name
    if local.is_file():
        return str(local)
    return shutil.which(name) or name


def materialize(source: str | Generated, base: Path, inputs: Path, where: str) -> Path:
    """A path as given, or the file a generating command writes (re-run only when the command changed)."""
    if isinstance(source, str):
        path = resolve(source, base)
        if not path.is_file():
            raise SpecError(f"{where}: {path} does not exist")
        return path
    inputs.mkdir(parents=True, exist_ok=True)
    out = inputs / source.file
    argv = [_tool(source.command[0]), *(a.replace("{output}", str(out)) for a in source.command[1:])]
    stamp = inputs / f"{source.file}.cmd"
    if out.is_file() and stamp.is_file() and stamp.read_text() == json.dumps(source.command):
        return out
    proc = subprocess.run(argv, cwd=base, capture_output=True, text=True)
    if proc.returncode != 0 or not out.is_file():
        raise SpecError(
            f"{where}: `{' '.join(source.command)}` failed (exit {proc.returncode}): "
            f"{(proc.stderr or proc.stdout).strip()[-800:]}"
        )
    stamp.write_text(json.dumps(source.command))
    return out


def _sync_args(sync: Sync | None) -> list[str]:
    if sync is None:
        return []
    args = ["--sync", sync.policy]
    for field in Sync.model_fields:
        value = getattr(sync, field)
        if field == "policy" or value is None or value is False:
            continue
        flag = "--" + field.replace("_", "-")
        args += [flag] if value is True else [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return args


def _variant_args(v: Variant, base: Path) -> list[str]:
    args = ["--backend", v.backend]
    if v.startup_latency:
        args += ["--startup-latency", v.startup_latency]
    if v.scheduler_config:
        path = resolve(v.scheduler_config, base)
        if not path.is_file():
            raise SpecError(f"variant {v.name}: scheduler_config {path} does not exist")
        args += ["--scheduler-config", str(path)]
    if v.record_decisions:
        args.append("--record-decisions")
    return args + list(v.run_args)


def _key(argv: list[str], files: list[Path]) -> str:
    h = hashlib.sha256(json.dumps(argv).encode())
    for f in files:
        h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()[:16]


def plan(
    exp: Experiment,
    base: Path,
    out: Path,
    *,
    batsim: str | None = None,
    repetitions: int | None = None,
    variants: tuple[str, ...] = (),
    cases: tuple[str, ...] = (),
) -> list[Task]:
    """Every run of the experiment (filtered by variant / case names), inputs generated on the way."""
    for what, wanted, known in (
        ("variant", variants, [v.name for v in exp.variants]),
        ("case", cases, [c.name for c in exp.cases]),
    ):
        unknown = sorted(set(wanted) - set(known))
        if unknown:
            raise SpecError(f"unknown {what}(s) {', '.join(unknown)}; the file has {', '.join(known)}")
    tasks: list[Task] = []
    for case in exp.cases:
        if cases and case.name not in cases:
            continue
        tasks += _case_tasks(exp, case, base, out, batsim, repetitions, variants)
    return tasks


def _case_tasks(
    exp: Experiment,
    case: Case,
    base: Path,
    out: Path,
    batsim: str | None,
    reps: int | None,
    only: tuple[str, ...],
) -> list[Task]:
    where = f"cases.{case.name}"
    platform = materialize(case.platform, base, out / "inputs", f"{where}.platform")
    workload = materialize(case.workload, base, out / "inputs", f"{where}.workload")
    common = ["-p", str(platform), "-w", str(workload), "--no-progress"]
    if batsim:
        common += ["--batsim", batsim]
    for arg in case.batsim_args:
        common += ["--batsim-arg", arg]
    tasks = []
    for v in exp.variants_of(case):
        if only and v.name not in only:
            continue
        points: list[tuple[str | None, float | None]] = (
            [(v.sweep.parameter, x) for x in v.sweep.values] if v.sweep else [(None, None)]
        )
        for param, value in points:
            sync = v.sync or Sync()
            if param is not None:
                sync = sync.model_copy(update={param: value})
            vargs = _variant_args(v, base) + (_sync_args(sync) if v.backend == "apiserver" else [])
            inputs = [platform, workload]
            if v.queues is not None:
                inputs.append(materialize(v.queues, base, out / "inputs", f"variants.{v.name}.queues"))
                vargs += ["--queues", str(inputs[-1])]
            for rep in range(reps or v.repetitions or exp.repetitions):
                seed = exp.seed + rep
                rdir = out / "runs" / case.name / v.name
                if param is not None:
                    rdir = rdir / f"{param}={value:g}"
                rdir = rdir / f"rep{rep}"
                argv = [*common, *vargs, "--seed", str(seed)]
                command = ("run",)
                if v.baseline is not None:
                    argv = [*common[:5], *(["--batsim", batsim] if batsim else []), *v.run_args,
                            "--seed", str(seed)]  # -p, -w, --no-progress: no Batsim args, no backend
                    command = ("baseline", "run", v.baseline)
                tasks.append(
                    Task(
                        case=case.name,
                        variant=v.name,
                        group=v.title,
                        param=param,
                        value=value,
                        rep=rep,
                        seed=seed,
                        out=rdir,
                        argv=(sys.executable, "-m", "batkube_py.cli", *command, *argv, "-o", str(rdir)),
                        key=_key(argv, inputs),
                        timeout=exp.run_timeout,
                        exclusive=v.is_exclusive,
                        failures_expected=v.failures_expected,
                        backend=v.backend,
                        workload=workload,
                        queues=inputs[2] if v.queues is not None else None,
                    )
                )
    return tasks
