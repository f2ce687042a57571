"""Side-by-side comparison of groups of runs (each group = one or more repetitions of one setup).

Groups are aggregated as mean ± sd over their repetitions. The sd is the *population* sd (ddof=0): that is
what the thesis's Table 4.1 reports (burst emulated makespan 2467.2 ± 26.8; the sample sd would be 28.3).
"""

from __future__ import annotations

import glob
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from batkube_py.analysis import metrics as m  # noqa: E402
from batkube_py.analysis import tenants  # noqa: E402
from batkube_py.analysis.compare_figures import decimals, dots_figure, overlay_timeseries  # noqa: E402
from batkube_py.analysis.figures import save, waiting_figure  # noqa: E402
from batkube_py.analysis.loading import AnalysisError, Run, load_run  # noqa: E402
from batkube_py.analysis.report import compute_metrics  # noqa: E402

DEFAULT_METRICS = (
    "makespan",
    "mean_waiting_time",
    "median_waiting_time",
    "p95_waiting_time",
    "max_waiting_time",
    "mean_turnaround_time",
    "mean_bounded_slowdown",
    "max_bounded_slowdown",
    "throughput_jobs_per_hour",
    "host_utilisation",
    "cpu_utilisation",
    "cpu_over_allocations",
    "jobs_total",
    "jobs_succeeded",
    "jobs_failed",
    "jobs_killed",
    "jobs_rejected",
)
KNOWN_METRICS = DEFAULT_METRICS + (
    "max_turnaround_time",
    "mean_slowdown",
    "max_slowdown",
    "batsim_mean_waiting_time",
    "batsim_mean_turnaround_time",
    "batsim_mean_slowdown",
    "pods_pending",
    "cpu_utilisation_peak",
    "cpu_over_allocated_node_seconds",
    "cpu_max_overcommit",
    "memory_over_allocations",
    "memory_over_allocated_node_seconds",
    "memory_max_overcommit",
    "pods_over_allocations",
    "pods_over_allocated_node_seconds",
    "pods_max_overcommit",
)


@dataclass
class Group:
    label: str
    runs: list[Run] = field(default_factory=list)
    metrics: list[dict] = field(default_factory=list)


def expand(spec: str) -> list[Path]:
    """A run directory, a jobs CSV, or a glob of either → the paths, in natural order."""
    path = Path(spec)
    if path.exists():
        return [path]
    if glob.has_magic(spec):
        hits = sorted((Path(p) for p in glob.glob(spec)), key=m.natural_key)
        if hits:
            return hits
        raise AnalysisError(f"{spec}: the pattern matches no file or directory")
    raise AnalysisError(f"{spec}: no such run directory or jobs CSV file")


def default_label(spec: str) -> str:
    name = Path(spec.rstrip("/")).name
    return re.sub(r"(_jobs)?\.csv$", "", name) or spec


def plan_groups(
    positional: list[str], labels: list[str], named: list[tuple[str, str]]
) -> list[tuple[str, list[Path]]]:
    """Each positional spec is a group (labelled by ``labels`` in order); ``named`` adds to labelled groups.

    The same label given several times (``--group a x --group a y``) merges into one group.
    """
    if labels and len(labels) != len(positional):
        raise AnalysisError(
            f"--labels gives {len(labels)} label(s) for {len(positional)} positional input(s); "
            "give one label per positional input (or use --group LABEL PATTERN)"
        )
    plan: dict[str, list[Path]] = {}
    for i, spec in enumerate(positional):
        label = labels[i] if labels else default_label(spec)
        plan.setdefault(label, []).extend(expand(spec))
    for label, spec in named:
        plan.setdefault(label, []).extend(expand(spec))
    if not plan:
        raise AnalysisError(
            "nothing to compare: give run directories, jobs CSV files or --group LABEL PATTERN"
        )
    return list(plan.items())


def load_groups(
    plan: list[tuple[str, list[Path]]], bsld_tau: float = 10.0, step: Callable[[str], None] = lambda _: None,
    tenancy: pd.DataFrame | None = None,
) -> list[Group]:  # fmt: skip
    """Every run loaded and measured; with `tenancy` (tenants.from_inputs), or for a Kueue run its own
    queue columns, also per-queue waits and Jain's indices (tenants.py)."""
    groups = []
    for label, paths in plan:
        group = Group(label)
        for path in paths:
            step(f"{label}: {path.name}")
            run = load_run(path)
            group.runs.append(run)
            metrics = compute_metrics(run, bsld_tau)
            table = tenancy if tenancy is not None else tenants.from_pods(run.pods)
            if table is not None:
                metrics.update(tenants.tenant_metrics(run.jobs, table, bsld_tau))
            group.metrics.append(metrics)
        groups.append(group)
    return groups


def metric_keys(groups: list[Group], asked: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The metrics asked for, or the default ones plus every per-queue metric some run has."""
    if asked:
        return asked
    return DEFAULT_METRICS + tenants.keys([mt for g in groups for mt in g.metrics])


def is_known(key: str) -> bool:
    return key in KNOWN_METRICS or bool(re.match(tenants.PATTERN, key) or re.match(tenants.PER_TENANT, key))


def aggregate(groups: list[Group], keys: tuple[str, ...] = DEFAULT_METRICS) -> pd.DataFrame:
    """Long table: metric, group, mean, sd (population), n — metrics no group defines are dropped."""
    rows = []
    for key in keys:
        for g in groups:
            vals = np.array([mt.get(key) for mt in g.metrics if mt.get(key) is not None], dtype=float)
            rows.append(
                {
                    "metric": key,
                    "group": g.label,
                    "n": len(vals),
                    "mean": vals.mean() if len(vals) else np.nan,
                    "sd": vals.std(ddof=0) if len(vals) else np.nan,
                }
            )
    df = pd.DataFrame(rows)
    defined = df.groupby("metric", sort=False)["n"].transform("max") > 0
    return df[defined].reset_index(drop=True)


def _cell(mean: float, sd: float, n: int, digits: int) -> str:
    if n == 0 or np.isnan(mean):
        return "—"
    return f"{mean:.{digits}f}" if n == 1 else f"{mean:.{digits}f} ± {sd:.{digits}f}"


def wide_table(agg: pd.DataFrame, digits: int = 1) -> pd.DataFrame:
    """Display table: one row per metric, a "mean ± sd" column per group, then differences to the first.

    ``digits`` decimals, except counts (integers when they are) and utilisations (at least 3).
    """
    labels = list(dict.fromkeys(agg["group"]))
    out = []
    for metric, sub in agg.groupby("metric", sort=False):
        by = sub.set_index("group")
        d = decimals(str(metric), digits, sub[["mean", "sd"]].to_numpy(dtype=float).ravel())
        row = {"metric": metric}
        for lab in labels:
            row[lab] = _cell(by.at[lab, "mean"], by.at[lab, "sd"], int(by.at[lab, "n"]), d)
        base = by.at[labels[0], "mean"]
        for lab in labels[1:]:
            diff = by.at[lab, "mean"] - base
            pct = f" ({diff / base * 100:+.1f} %)" if base and np.isfinite(base) and np.isfinite(diff) else ""
            row[f"Δ {lab} − {labels[0]}"] = "—" if np.isnan(diff) else f"{diff:+.{d}f}{pct}"
        out.append(row)
    return pd.DataFrame(out)


def csv_table(agg: pd.DataFrame) -> str:
    """Machine-readable: per metric and group, mean/sd/n, plus the difference of means to the first group."""
    wide = agg.pivot(index="metric", columns="group", values=["mean", "sd", "n"])
    labels = list(dict.fromkeys(agg["group"]))
    cols = {}
    for lab in labels:
        for stat in ("mean", "sd", "n"):
            col = wide[(stat, lab)]
            cols[f"{lab}_{stat}"] = col.astype(int) if stat == "n" else col
    for lab in labels[1:]:
        cols[f"diff_{lab}_minus_{labels[0]}"] = wide[("mean", lab)] - wide[("mean", labels[0])]
    df = pd.DataFrame(cols).reindex(list(dict.fromkeys(agg["metric"])))
    buf = io.StringIO()
    df.to_csv(buf, index_label="metric", float_format="%.6f")
    return buf.getvalue()


def markdown_table(wide: pd.DataFrame) -> str:
    cols = list(wide.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in wide.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def text_table(wide: pd.DataFrame) -> str:
    cols = list(wide.columns)
    widths = [max(len(str(c)), *(len(str(v)) for v in wide[c])) for c in cols]
    fmt = lambda vals: "  ".join(str(v).ljust(w) for v, w in zip(vals, widths, strict=True)).rstrip()  # noqa: E731
    lines = [fmt(cols), fmt("-" * w for w in widths)]
    lines += [fmt(row) for row in wide.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def write_outputs(groups: list[Group], agg: pd.DataFrame, outdir: Path, digits: int = 1) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    wide = wide_table(agg, digits)
    paths = []
    for name, text in (
        ("comparison.txt", text_table(wide)),
        ("comparison.md", markdown_table(wide)),
        ("comparison.csv", csv_table(agg)),
    ):
        (outdir / name).write_text(text, encoding="utf-8")
        paths.append(outdir / name)
    waits = {
        g.label: pd.concat([r.jobs.loc[r.jobs["state"] != "rejected", "waiting_time"] for r in g.runs])
        for g in groups
    }
    paths += save(
        waiting_figure(
            waits, "Waiting time distribution (repetitions pooled, fraction of each group's jobs)"
        ),
        outdir,
        "compare_waiting_time",
    )
    paths += save(overlay_timeseries(groups), outdir, "compare_timeseries")
    paths += save(dots_figure(agg, digits), outdir, "compare_bars")
    return paths
