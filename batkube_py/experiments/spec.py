"""Experiment files: the pydantic models of the YAML and their loading.

Validation happens here, at the edge, so that a typo in a 200-run sweep fails before the first run and
names the file and the field (``experiments/kit.yaml: variants.1.sync.timeout_value: ...``), instead of
surfacing as a failed run an hour later.

Strings may use ``${name}`` variables (``vars:`` in the file, overridable with ``--var name=value``; the
built-in ``${data_dir}``) and ``${data:NAME}``, a public input fetched by name and verified
(batkube_py.inputs.datasets);
relative paths are resolved against the experiment file's directory, so a file works from any cwd.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from batkube_py import safeyaml
from batkube_py.experiments import thesis
from batkube_py.inputs import datasets

SWEEPABLE = (
    "timeout_value",
    "min_delay",
    "max_simulation_timestep",
    "base_simulation_timestep",
    "backoff_multiplier",
)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_DATA = re.compile(r"\$\{data:([\w.-]+)\}")


def _not_dots(name: str) -> str:
    """Names become directories under the output: `.` and `..` would leave it."""
    if name.strip(".") == "":
        raise ValueError(f"{name!r} is not a usable name (it would be a path outside the output directory)")
    return name


_NAME = Annotated[str, Field(pattern=r"^[\w.-]+$", max_length=100), AfterValidator(_not_dots)]


class SpecError(ValueError):
    """A user-facing problem with an experiment file (names the file and the field)."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Generated(_Model):
    """An input produced by a command (e.g. `swf-tools convert` on the user's copy of a trace), because
    traces that cannot be redistributed must be regenerated, not committed."""

    command: list[str] = Field(min_length=1)
    file: _NAME = Field(description="name under OUT/inputs/; {output} in command")


class RunsReference(_Model):
    """Runs made elsewhere (the thesis's emulated k3s runs, the original Batkube's) shown as a group; when
    they are not at hand, the thesis's `published` figures for them (experiments/thesis.py) stand in."""

    label: str
    runs: list[str] = Field(min_length=1, description="jobs CSVs, run directories or globs")
    published: Literal[tuple(thesis.TABLE_4_1)] | None = None  # type: ignore[valid-type]


class SweepReference(_Model):
    """A published sweep CSV (Batkube's timeout.sh / min-delay.sh / max-sim-timestep.sh output)."""

    label: str
    parameter: Literal[SWEEPABLE]  # type: ignore[valid-type]
    csv: str
    x_column: str
    x_scale: float = 1.0


class Case(_Model):
    name: _NAME
    platform: str | Generated
    workload: str | Generated
    references: list[RunsReference] = []
    sweep_references: list[SweepReference] = []
    batsim_args: list[str] = []


class Sync(_Model):
    """`batkube run --sync ...` for the apiserver backend; None keeps the CLI default."""

    policy: Literal["auto", "queue", "paced", "settle", "timeout"] = "auto"
    timeout_value: float | None = Field(None, ge=0)
    min_delay: float | None = Field(None, ge=0)
    base_simulation_timestep: float | None = Field(None, gt=0)
    max_simulation_timestep: float | None = Field(None, gt=0)
    backoff_multiplier: float | None = Field(None, ge=1)
    fast_forward_on_no_pending_jobs: bool = False
    detect_scheduler_deadlock: bool = False
    scheduler_crash_timeout: float | None = Field(None, gt=0)
    backoff: Literal["expedite", "wait"] | None = None


class Sweep(_Model):
    parameter: Literal[SWEEPABLE]  # type: ignore[valid-type]
    values: list[float] = Field(min_length=1)
    log_x: bool = False


class Variant(_Model):
    """One way of simulating (a group of the comparison), optionally swept over a sync parameter."""

    name: Annotated[str, Field(pattern=r"^[\w.+-]+$", max_length=100), AfterValidator(_not_dots)]
    label: str | None = None
    backend: Literal["embedded", "apiserver"] = "embedded"
    startup_latency: str | None = None
    scheduler_config: str | None = None
    record_decisions: bool = False
    sync: Sync | None = None
    sweep: Sweep | None = None
    cases: list[str] | None = Field(None, description="only these cases (default: all)")
    repetitions: int | None = Field(None, ge=1, description="default: the experiment's")
    failures_expected: bool = Field(False, description="failed runs are data (success rate), not errors")
    exclusive: bool | None = Field(None, description="run alone (wall-clock-sensitive); default: apiserver")
    queues: str | Generated | None = Field(None, description="a Kueue queues file: `batkube run --queues`")
    baseline: Literal["easy"] | None = Field(None, description="a batch scheduler as the decision process "
                                             "instead of batkube: `batkube baseline run` (run_args go there)")
    run_args: list[str] = []

    @model_validator(mode="after")
    def _backend_options(self) -> Variant:
        if self.backend == "embedded" and (self.sync is not None or self.sweep is not None):
            raise ValueError("sync and sweep apply to backend: apiserver only")
        if self.baseline is not None:
            batkube_only = {
                "backend": self.backend != "embedded", "startup_latency": self.startup_latency,
                "scheduler_config": self.scheduler_config, "record_decisions": self.record_decisions,
                "queues": self.queues,
            }  # fmt: skip
            given = [name for name, value in batkube_only.items() if value]
            if given:
                raise ValueError(f"a baseline runs without batkube: no {', '.join(given)}")
        return self

    @property
    def title(self) -> str:
        return self.label or self.name

    @property
    def is_exclusive(self) -> bool:
        return self.backend == "apiserver" if self.exclusive is None else self.exclusive


class Table(_Model):
    metrics: list[str] = ["makespan", "mean_waiting_time"]
    digits: int = Field(1, ge=0, le=6)
    compare: bool = Field(True, description="full per-case comparison (loads every run; off for scale)")
    across_cases: bool = Field(
        False, description="also overlay the cases in one comparison (OUT/cases/): same jobs, other shapes"
    )
    per_queue: bool = Field(False, description="per-queue waits and Jain's index in every run, the queues "
                            "from the case's workload and a variant's queues file (analysis/tenants.py)")


class Experiment(_Model):
    name: _NAME
    description: str = ""
    vars: dict[str, str] = {}
    repetitions: int = Field(1, ge=1)
    seed: int = 0
    cases: list[Case] = Field(min_length=1)
    variants: list[Variant] = Field(min_length=1)
    table: Table = Table()
    run_timeout: float | None = Field(None, gt=0, description="seconds before a run is killed")
    measure_resources: bool = Field(False, description="report wall time and peak memory per group")

    @field_validator("cases", "variants")
    @classmethod
    def _unique(cls, items: list) -> list:
        names = [x.name for x in items]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"duplicate name(s): {', '.join(dup)}")
        return items

    @model_validator(mode="after")
    def _known_cases(self) -> Experiment:
        known = {c.name for c in self.cases}
        for i, v in enumerate(self.variants):
            unknown = sorted(set(v.cases or ()) - known)
            if unknown:
                raise ValueError(f"variants.{i}.cases: unknown case(s) {', '.join(unknown)}")
        return self

    def variants_of(self, case: Case) -> list[Variant]:
        return [v for v in self.variants if v.cases is None or case.name in v.cases]


def _substitute(node: object, env: dict[str, str], where: str) -> object:
    if isinstance(node, str):

        def repl(m: re.Match) -> str:
            if m.group(1) not in env:
                raise SpecError(f"{where}: unknown variable ${{{m.group(1)}}} (define it under vars:)")
            return env[m.group(1)]

        def data(m: re.Match) -> str:
            shared = env.get("shared", "")  # the files' folder of reference data, --var shared=PATH
            also = Path(shared).expanduser() if shared and "${" not in shared else None
            try:
                return str(datasets.path(m.group(1), also))
            except datasets.DataError as exc:
                raise SpecError(f"{where}: {exc}") from None

        return _DATA.sub(data, _VAR.sub(repl, node))
    if isinstance(node, list):
        return [_substitute(x, env, f"{where}.{i}") for i, x in enumerate(node)]
    if isinstance(node, dict):
        return {k: _substitute(v, env, f"{where}.{k}" if where else str(k)) for k, v in node.items()}
    return node


def _errors(path: Path, exc: ValidationError) -> str:
    lines = [f"{path}: invalid experiment file"]
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"] if not str(x).startswith(("str", "Generated")))
        lines.append(f"  {loc or '(top level)'}: {err['msg']}")
    return "\n".join(lines)


PACKAGED = Path(__file__).with_name("files")


def packaged() -> dict[str, Path]:
    """The experiments shipped with batkube-py (package data: they run from a wheel), by name."""
    return {p.stem: p for p in sorted(PACKAGED.glob("*.yaml"))}


def summary(path: Path) -> tuple[str, list[str]]:
    """An experiment file's description and the public inputs it names (${data:NAME}), read from its text
    without loading it: loading would fetch them."""
    text = path.read_text()
    try:
        doc = safeyaml.load_file(path)
    except safeyaml.YamlError:
        doc = None
    description = doc.get("description", "") if isinstance(doc, dict) else ""
    return " ".join(str(description).split()), sorted(set(_DATA.findall(text)))


def locate(name_or_path: str) -> Path:
    """An experiment file as given, or the packaged experiment of that name (`batkube experiment run
    burst`)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    known = packaged()
    if name_or_path in known:
        return known[name_or_path]
    raise SpecError(
        f"{name_or_path}: no such experiment file, nor a packaged experiment (known: {', '.join(known)})"
    )


def builtins() -> dict[str, str]:
    """Variables every file may use: ${data_dir}, the offline folder (BATKUBE_DATA_DIR) if set, else the
    download cache; the thesis's reference runs are looked for under it."""
    return {"data_dir": str(datasets.offline_dir() or datasets.cache_dir())}


def load(path: Path, overrides: dict[str, str] | None = None) -> Experiment:
    """Parses, substitutes variables (built-ins < file defaults < overrides) and validates a file."""
    try:
        doc = safeyaml.load_file(path)
    except safeyaml.YamlError as exc:
        raise SpecError(str(exc)) from None
    if not isinstance(doc, dict):
        raise SpecError(f"{path}: expected a mapping (name, cases, variants, ...)")
    raw_vars = doc.get("vars") or {}
    if not isinstance(raw_vars, dict):
        raise SpecError(f"{path}: vars: expected a mapping of name: value")
    env = builtins()
    env.update({str(k): str(v) for k, v in raw_vars.items()})
    env.update(overrides or {})
    for name in env:  # a variable may use the ones before it (kit_swf: ${shared}/reference/...)
        env[name] = str(_substitute(env[name], env, f"vars.{name}"))
    doc = _substitute({k: v for k, v in doc.items() if k != "vars"}, env, "")
    doc["vars"] = env
    try:
        return Experiment.model_validate(doc)
    except ValidationError as exc:
        raise SpecError(_errors(path, exc)) from None
