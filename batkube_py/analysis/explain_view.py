"""Printing an :class:`~batkube_py.analysis.explain.Explanation`: rich tables on a terminal, the same
tables as plain aligned text otherwise (pipes, files, CI logs), JSON with ``--json``."""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from batkube_py.analysis.explain import Attempt, Explanation, explain_pod, seconds
from batkube_py.analysis.loading import AnalysisError

SHOWN_ATTEMPTS = 20
"""Attempts listed in full; a pod retried more often shows the first and last ones (all in --json)."""


def _table(plain: bool, *columns: str) -> Table:
    table = Table(
        box=None if plain else box.SIMPLE_HEAD,
        pad_edge=False,
        show_edge=False,
    )
    for col in columns:
        table.add_column(col, overflow="fold")
    return table


def _titled(title: str, table: Table) -> list[RenderableType]:
    return [Text(""), Text(title, style="bold"), table]


def attempts_table(ex: Explanation, plain: bool) -> Table:
    table = _table(plain, "#", "time (s)", "outcome", "node", "fit / examined")
    shown = ex.attempts
    if len(shown) > SHOWN_ATTEMPTS:
        half = SHOWN_ATTEMPTS // 2
        shown = [*ex.attempts[:half], None, *ex.attempts[-half:]]
    for a in shown:
        if a is None:
            table.add_row("…", f"{len(ex.attempts) - SHOWN_ATTEMPTS} more (all in --json)", "", "", "")
            continue
        style = "green" if a.result == "bound" else "red"
        if a.group:  # a group cycle: its members' nodes, and how many of them fit against minCount
            hosts = sorted({n for n in a.members.values() if n})
            node, fit = " ".join(hosts) or "-", f"{a.feasible} pods / minCount {a.min_count}"
        else:
            node, fit = a.node or "-", f"{a.feasible} / {a.evaluated or a.nodes}"
        table.add_row(str(a.attempt), seconds(a.time), Text(a.result, style=style), node, fit)
    return table


def admission_lines(ex: Explanation) -> list[Text]:
    """Kueue's steps, one line each (Kueue's messages are long: a table would wrap them): when, which
    workload (a resubmitted job is a new one), what, in Kueue's words."""
    out = []
    for st in ex.admission:
        span = st.until is not None and st.until != st.time
        line = Text(f"{seconds(st.time)}{f'–{seconds(st.until)}' if span else ''} s  {st.workload}  ")
        line.append(st.event, style={"admitted": "green", "evicted": "red"}.get(st.event, "bold"))
        line.append(f"  {st.text}")
        out.append(line)
    return out


def rejections_table(a: Attempt, plain: bool) -> Table:
    """plugin → reason → how many nodes, with a few of their names (older records: reasons only)."""
    table = _table(plain, "filter plugin", "reason", "nodes", "e.g.")
    if a.filters:
        for plugin, reasons in a.filters.items():
            for i, (reason, (count, names)) in enumerate(sorted(reasons.items(), key=lambda kv: -kv[1][0])):
                more = ", …" if count > len(names) else ""
                table.add_row(plugin if i == 0 else "", reason, str(count), ", ".join(names) + more)
    else:
        by = ", ".join(a.rejected_by) or "?"
        for reason, count in sorted(a.reasons.items(), key=lambda kv: -kv[1]):
            table.add_row(by, reason, str(count), "")
    return table


def scores_table(a: Attempt, plain: bool) -> Table:
    """Normalised score × weight per plugin for the best nodes, the chosen one marked."""
    nodes = [r.node + (" (chosen)" if r.node == a.node else "") for r in a.top]
    table = _table(plain, "score plugin", *nodes)
    for col in table.columns[1:]:
        col.justify = "right"
    for plugin in a.top[0].plugins:
        cells = []
        for r in a.top:
            s = r.plugins[plugin]
            cells.append(f"{s.normalized}×{s.weight}={s.normalized * s.weight}")
        table.add_row(plugin, *cells)
    table.add_row(Text("total", style="bold"), *(Text(str(r.total), style="bold") for r in a.top))
    return table


def _fit(a: Attempt) -> str:
    if a.group:
        return f"group cycle {a.attempt} at {seconds(a.time)} s: {a.message or 'placed'}"
    return f"attempt {a.attempt} at {seconds(a.time)} s, {a.feasible} of {a.evaluated or a.nodes} nodes fit"


TIE_BREAKS = {
    "uniform": "drawn uniformly from the seed (kube-scheduler 1.32)",
    "heap-drawn-order": "by the root of Go's heap over the order the parallel Filter workers found the "
    "nodes in, an order drawn from the seed (kube-scheduler 1.37, parallelism > 1)",
    "heap-rotation": "by the root of Go's heap over the nodes in rotation order from nextStartNodeIndex, "
    "with no seed (kube-scheduler 1.37, parallelism 1)",
}


def choice_note(a: Attempt) -> str:
    if not a.top:
        return (
            f"chosen: {a.node} (the only feasible node, or a profile without score plugins: nothing to rank)"
        )
    best = a.top[0].total
    ties = sum(r.total == best for r in a.top)
    rule = TIE_BREAKS.get(a.tie_break, "as the twin's kube-scheduler version breaks them (docs/versions.md)")
    if a.node in {r.node for r in a.top}:
        tied = f" (ties broken {rule})" if ties > 1 else ""
        return f"chosen: {a.node}, best total {best}{tied}"
    return (
        f"chosen: {a.node}, tied with the best total {best}; ties are broken {rule}, "
        f"and the table shows the first {len(a.top)} in node order"
    )


def renderables(ex: Explanation, plain: bool) -> list[RenderableType]:
    head = Text()
    if ex.group:
        head.append(f"pod group {ex.pod}", style="bold")
        head.append(f"  (job {ex.job_id}, {len(ex.group)} pods: {' '.join(ex.group)}; profile "
                    f"{ex.profile or '?'}, run {ex.run})")  # fmt: skip
    else:
        head.append(f"pod {ex.pod}", style="bold")
        head.append(f"  (job {ex.job_id}, profile {ex.profile or '?'}, run {ex.run})")
    out: list[RenderableType] = [head, Text(ex.verdict, style="bold green" if ex.bound else "bold red")]
    if ex.final:
        f = ex.final
        times = ", ".join(
            f"{k.removesuffix('_time')} {f[k]} s" for k in ("bind_time", "finish_time") if f.get(k)
        )
        out.append(
            Text(
                f"pods.csv: {f.get('state', '?')}"
                + (f" on {f['node']}" if f.get("node") else "")
                + (f", {times}" if times else "")
                + (f"; {f['reason']}" if f.get("reason") else "")
            )
        )
    if ex.admission:
        out += [Text(""), Text(f"admission by Kueue ({ex.admission_source})", style="bold")]
        out += admission_lines(ex)
    if not ex.attempts:
        return out
    out += _titled(f"attempts ({len(ex.attempts)})", attempts_table(ex, plain))
    if ex.overtaken:
        out += [Text(""), Text("why newer pods went first", style="bold"), Text(ex.overtaken[0])]
        out += [Text(f"  - {line}") for line in ex.overtaken[1:]]
    failed, bound = ex.last_failure, ex.bound
    if failed is not None:
        if bound is not None and bound.time >= failed.time:
            why = "why it waited"
        elif (ex.final or {}).get("state", "Pending") == "Pending":
            why = "why it is pending"
        else:
            why = "why it was not scheduled"
        out += _titled(f"{why}: {_fit(failed)}", rejections_table(failed, plain))
    if bound is not None:
        if bound.reasons:
            out += _titled(
                f"nodes filtered out when it was bound: {_fit(bound)}", rejections_table(bound, plain)
            )
        if bound.top:
            title = (
                f"scores at attempt {bound.attempt}: best {len(bound.top)} of {bound.feasible} feasible "
                "nodes (normalized score × weight)"
            )
            out += _titled(title, scores_table(bound, plain))
        if bound.group:
            placed = ", ".join(f"{p} → {n}" for p, n in bound.members.items())
            out.append(Text(f"members placed in upstream's order: {placed}"))
        else:
            out.append(Text(choice_note(bound)))
    return out


@click.command("explain")
@click.argument("run_dir", metavar="RUN", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("pod")
@click.option("--json", "as_json", is_flag=True, help="Print the explanation and every attempt as JSON.")
def explain(run_dir: Path, pod: str, as_json: bool) -> None:
    """Why POD went to its node, or why it is pending: its scheduling attempts (time, outcome), which
    filter rejected which nodes, the best nodes' scores per plugin and the chosen node.

    RUN is a run directory made with `batkube run ... --record-decisions` (it reads RUN/decisions.jsonl,
    and pods.csv for the pod's final state). POD is a pod name (w0-17) or a Batsim job id (w0!17, or 17
    when only one workload has it).

    With --queues, the job's admission by Kueue comes first: its position in its ClusterQueue, each
    attempt in Kueue's words (flavors considered, the quota short and by how much, the head it waited
    behind, the victims), its evictions and resubmissions (RUN/admissions.jsonl of the Kueue twin; with
    the real Kueue, what pods.csv and queues.csv hold).
    """
    try:
        ex = explain_pod(run_dir, pod)
    except AnalysisError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{run_dir}: {exc.strerror or exc}") from None
    if as_json:
        click.echo(ex.model_dump_json(indent=2))
        return
    console = Console(highlight=False)
    plain = not console.is_terminal
    if plain:  # a pipe or a file: no colours, and tables as wide as their content
        console = Console(highlight=False, no_color=True, width=200)
    for item in renderables(ex, plain):
        console.print(item, soft_wrap=isinstance(item, Text))
