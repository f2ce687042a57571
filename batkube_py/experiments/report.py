"""After the runs: per-case comparisons (batkube_py.analysis), the Table-4.1-style summary, resources,
and report.md tying them together with the command that produced them.

Tables are built from the runs on disk, not from memory, so a resumed campaign reports every run, and
failed runs are shown as failures next to the numbers — never silently dropped.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from batkube_py.analysis import compare as cmp
from batkube_py.analysis import tenants
from batkube_py.analysis.loading import AnalysisError
from batkube_py.experiments import sweeps, thesis
from batkube_py.experiments.plan import Task, resolve
from batkube_py.experiments.spec import Experiment, RunsReference, Variant

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Outcome:
    """What a campaign produced, for the CLI's summary and exit status."""

    table: str = ""
    files: list[Path] = field(default_factory=list)
    failed: list[tuple[Task, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    missing: list[tuple[str, RunsReference]] = field(default_factory=list)  # (case, reference) not at hand


def _fmt(values: list[float], digits: int) -> str:
    if not values:
        return "—"
    a = np.asarray(values, dtype=float)
    mean = f"{a.mean():.{digits}f}"
    return mean if len(a) == 1 else f"{mean} ± {a.std(ddof=0):.{digits}f}"


def write_runs_csv(tasks: list[Task], results: dict[Path, dict[str, Any]], path: Path) -> None:
    cols = [
        "case",
        "variant",
        "param",
        "value",
        "rep",
        "seed",
        "status",
        "makespan",
        "mean_waiting_time",
        "wall_seconds",
        "adapter_peak_rss_mib",
        "batsim_peak_rss_mib",
        "error",
        "dir",
    ]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for t in tasks:
            r = results.get(t.out, {})
            w.writerow(
                [
                    t.case,
                    t.variant,
                    t.param or "",
                    "" if t.value is None else f"{t.value:g}",
                    t.rep,
                    t.seed,
                    r.get("status", "not run"),
                    r.get("makespan"),
                    r.get("mean_waiting_time"),
                    r.get("wall_seconds"),
                    r.get("adapter_peak_rss_mib"),
                    r.get("batsim_peak_rss_mib"),
                    r.get("error") or "",
                    t.out.relative_to(path.parent),
                ]
            )


def _references(exp: Experiment, case_name: str, base: Path, outcome: Outcome) -> list[tuple[str, list]]:
    """The reference groups whose runs are at hand; for the others a note, and the thesis's published
    figures in the summary when the reference names them (`published:`), never a failed report."""
    case = next(c for c in exp.cases if c.name == case_name)
    plan: list[tuple[str, list[Path]]] = []
    for ref in case.references:
        paths: list[Path] = []
        try:
            for pattern in ref.runs:
                paths += cmp.expand(str(resolve(pattern, base)))
        except AnalysisError as exc:
            stand_in = "; the thesis's published figures are shown instead" if ref.published else ""
            outcome.notes.append(
                f"{case_name}: reference {ref.label!r} not available ({exc}; set BATKUBE_DATA_DIR or "
                f"--var shared=PATH to a copy of the reference runs){stand_in}"
            )
            outcome.missing.append((case_name, ref))
            continue
        plan.append((ref.label, paths))
    return plan


def _case_groups(
    exp: Experiment, case_name: str, base: Path, tasks: list[Task], results: dict, outcome: Outcome
) -> list:
    plan = _references(exp, case_name, base, outcome)
    plan += [(v.title, ok) for v, ok in _ok_runs(exp, case_name, tasks, results)]
    return cmp.load_groups(plan, tenancy=_tenancy(exp, case_name, tasks, outcome)) if plan else []


def _tenancy(exp: Experiment, case: str, tasks: list[Task], outcome: Outcome) -> pd.DataFrame | None:
    """`table.per_queue`: every run cut by the queues the case's workload names, mapped to ClusterQueues
    by the first variant's queues file (they differ in strategy, not in their LocalQueues)."""
    if not exp.table.per_queue:
        return None
    mine = [t for t in tasks if t.case == case]
    workload = next((t.workload for t in mine if t.workload is not None), None)
    queues = next((t.queues for t in mine if t.queues is not None), None)
    if workload is None:
        return None
    outcome.notes.append(f"{case}: per-queue figures of every run from {workload.name}'s `queue` fields"
                         + (f" and {queues.name}'s LocalQueues" if queues else ""))
    return tenants.from_inputs(workload, queues)


def _ok_runs(exp: Experiment, case_name: str, tasks: list[Task], results: dict) -> list[tuple[Variant, list]]:
    """Each (non-swept) variant of the case with its runs that succeeded."""
    case = next(c for c in exp.cases if c.name == case_name)
    found = []
    for v in exp.variants_of(case):
        ok = [t.out for t in tasks if t.case == case_name and t.variant == v.name
              and results.get(t.out, {}).get("status") == "ok"]  # fmt: skip
        if ok and v.sweep is None:
            found.append((v, ok))
    return found


def _across_cases(exp: Experiment, names: list[str], tasks: list[Task], results: dict, out: Path,
                  outcome: Outcome, sections: list[str]) -> None:  # fmt: skip
    """One comparison of every case (table: across_cases), for an experiment whose cases are the same
    jobs in different shapes (racks.yaml: placed anywhere, in one rack, flattened): OUT/cases/."""
    per_case = {name: _ok_runs(exp, name, tasks, results) for name in names}
    single = all(len(runs) <= 1 for runs in per_case.values())
    plan = [(name if single else f"{name}: {v.title}", ok)
            for name, runs in per_case.items() for v, ok in runs]  # fmt: skip
    if len(plan) < 2:
        return
    try:
        groups = cmp.load_groups(plan)
    except AnalysisError as exc:
        outcome.notes.append(f"comparison across cases skipped, the analysis could not read a run: {exc}")
        return
    agg = cmp.aggregate(groups, tuple(dict.fromkeys((*exp.table.metrics, *cmp.DEFAULT_METRICS))))
    outcome.files += cmp.write_outputs(groups, agg, out / "cases", exp.table.digits)
    sections.append("### all cases (cases/)\n\n" + cmp.markdown_table(cmp.wide_table(agg, exp.table.digits)))


def _rows_from_results(
    exp: Experiment, case: str, tasks: list[Task], results: dict, rows: dict, columns: list[str]
) -> None:
    """Summary cells from each run's summary.json (via result.json) when the full comparison is off."""
    for v in exp.variants:
        ok = [results[t.out] for t in tasks if t.case == case and t.variant == v.name and t.param is None
              and results.get(t.out, {}).get("status") == "ok"]  # fmt: skip
        if not ok:
            continue
        if v.title not in columns:
            columns.append(v.title)
        rows.setdefault(case, {})[v.title] = " / ".join(
            _fmt([r[k] for r in ok if r.get(k) is not None], exp.table.digits) for k in exp.table.metrics
        )


def build(exp: Experiment, base: Path, out: Path, tasks: list[Task], results: dict, command: str) -> Outcome:
    outcome = Outcome()
    write_runs_csv(tasks, results, out / "runs.csv")
    outcome.files.append(out / "runs.csv")
    outcome.failed = [
        (t, results[t.out].get("error") or "failed")
        for t in tasks
        if results.get(t.out, {}).get("status") == "failed" and not t.failures_expected
    ]
    notes = [(t, results.get(t.out, {}).get("note")) for t in tasks]
    outcome.notes += [f"{t.name}: {note}" for t, note in notes if note]
    metrics = tuple(exp.table.metrics)
    case_names = list(dict.fromkeys(t.case for t in tasks))
    rows: dict[str, dict[str, str]] = {}
    columns: list[str] = []
    sections: list[str] = []
    for name in case_names:
        groups = []
        if exp.table.compare:
            try:
                groups = _case_groups(exp, name, base, tasks, results, outcome)
            except AnalysisError as exc:
                outcome.notes.append(f"{name}: comparison skipped, the analysis could not read a run: {exc}")
        if not groups:
            _rows_from_results(exp, name, tasks, results, rows, columns)
        if groups:
            keys = (*metrics, *cmp.metric_keys(groups))
            agg = cmp.aggregate(groups, tuple(dict.fromkeys(keys)))
            outcome.files += cmp.write_outputs(groups, agg, out / name, exp.table.digits)
            sections.append(f"### {name}\n\n" + cmp.markdown_table(cmp.wide_table(agg, exp.table.digits)))
            for g in groups:
                columns.append(g.label) if g.label not in columns else None
                rows.setdefault(name, {})[g.label] = " / ".join(
                    _fmt([x[k] for x in g.metrics if x.get(k) is not None], exp.table.digits) for k in metrics
                )
        for case, ref in outcome.missing:
            if case == name:
                columns.append(ref.label) if ref.label not in columns else None
                cell = thesis.cell(ref.published, metrics, exp.table.digits) if ref.published else None
                rows.setdefault(name, {})[ref.label] = cell or "reference not available"
        for v in exp.variants:
            done = [t for t in tasks if t.case == name and t.variant == v.name]
            if v.sweep is not None and done:
                refs = [
                    r
                    for c in exp.cases
                    if c.name == name
                    for r in c.sweep_references
                    if r.parameter == v.sweep.parameter
                ]
                refs = _available_sweep_refs(name, refs, base, outcome)
                baselines = {g.label: g.metrics for g in groups}
                outcome.files += sweeps.write(v, name, done, results, refs, base, baselines, out / "sweeps")
        for t in tasks:
            if t.case == name and t.param is None and results.get(t.out, {}).get("status") == "failed":
                label = next(v.title for v in exp.variants if v.name == t.variant)
                columns.append(label) if label not in columns else None
                cell = rows.setdefault(name, {}).get(label, "—")
                if "failed" not in cell:
                    n = sum(
                        1
                        for u in tasks
                        if u.case == name
                        and u.variant == t.variant
                        and results.get(u.out, {}).get("status") == "failed"
                    )
                    rows[name][label] = f"{cell} ({n} failed)"
    if exp.table.compare and exp.table.across_cases:
        _across_cases(exp, case_names, tasks, results, out, outcome, sections)
    if any(ref.published for _, ref in outcome.missing):
        outcome.notes.append(f"published figures: {thesis.CITATION}")
    header = " / ".join(k.replace("_", " ") for k in metrics)
    table = [f"| case ({header}) | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    table += [
        "| " + " | ".join([c, *(rows.get(c, {}).get(col, "—") for col in columns)]) + " |" for c in rows
    ]
    outcome.table = "\n".join(table) + "\n"
    (out / "table.md").write_text(outcome.table)
    outcome.files.append(out / "table.md")
    resources = _resources(exp, tasks, results) if exp.measure_resources else ""
    _report_md(exp, out, command, outcome, sections, resources)
    return outcome


def _available_sweep_refs(case: str, refs: list, base: Path, outcome: Outcome) -> list:
    """Published sweep CSVs at hand; a missing one is a note, the sweep figure is drawn without it."""
    missing = [r for r in refs if not resolve(r.csv, base).is_file()]
    outcome.notes += [
        f"{case}: sweep reference {r.label!r} ({r.parameter}) not available: {resolve(r.csv, base)} does not "
        "exist (set BATKUBE_DATA_DIR or --var shared=PATH)"
        for r in missing
    ]
    return [r for r in refs if r not in missing]


def _resources(exp: Experiment, tasks: list[Task], results: dict) -> str:
    lines = [
        "| case | variant | runs ok | wall time (s) | peak RSS, adapter / Batsim (MiB) |",
        "|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys((t.case, t.variant) for t in tasks if t.param is None))
    for case, variant in keys:
        rs = [results.get(t.out, {}) for t in tasks if (t.case, t.variant) == (case, variant)]
        ok = [r for r in rs if r.get("status") == "ok"]
        peaks = []
        for key in ("adapter_peak_rss_mib", "batsim_peak_rss_mib"):
            rss = [r[key] for r in ok if r.get(key) is not None]
            peaks.append(f"{max(rss):g}" if rss else "—")
        lines.append(
            f"| {case} | {variant} | {len(ok)}/{len(rs)} | {_fmt([r['wall_seconds'] for r in ok], 1)} | "
            f"{' / '.join(peaks)} |"
        )
    return "\n".join(lines) + "\n"


def _report_md(
    exp: Experiment, out: Path, command: str, outcome: Outcome, sections: list[str], res: str
) -> None:
    parts = [
        f"# {exp.name}\n",
        exp.description.strip() + "\n" if exp.description else "",
        f"Produced by `{command}`.\n",
        "## Summary\n",
        outcome.table,
    ]
    if res:
        parts += ["## Wall time and memory\n", res]
    if sections:
        parts += ["## Per case (mean ± population sd over repetitions)\n", *sections]
    figs = sorted(p.relative_to(out) for p in outcome.files if p.suffix == ".png")
    if figs:
        parts += ["## Figures\n", *(f"![{p.stem}]({p})\n" for p in figs)]
    if outcome.notes:
        parts += ["## Notes\n", *(f"- {n}\n" for n in outcome.notes)]
    if outcome.failed:
        parts += ["## Failed runs\n", *(f"- {t.name}: {err}\n" for t, err in outcome.failed)]
    text = "\n".join(p for p in parts if p)
    (out / "report.md").write_text(text)
    outcome.files.append(out / "report.md")
