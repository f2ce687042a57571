"""The Batkube thesis's reference figures, embedded for when the runs behind them are not at hand.

The thesis's emulated (k3s) and simulated (original Batkube) runs are not redistributed with batkube-py,
so a clone or a wheel usually cannot read them. An experiment's reference names one of these entries
(`published: burst/emulated`); when its runs are missing, the report shows these numbers, marked as
published and cited, instead of failing or silently dropping the column.

Values: makespan (max finish_time) and mean waiting time in seconds, mean ± population sd over the runs,
as the thesis's Table 4.1 aggregates them (oar-team/batkube-test scripts/deviation.r: 10 emulated runs of
burst and spaced, 1 of KIT, 20 Batkube runs of each).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

CITATION = (
    "Batkube thesis (T. Larue, 2020), Table 4.1: emulated k3s vs Batkube makespan / mean waiting time; "
    "runs published in github.com/oar-team/batkube-test@2b5591c results/, aggregated by scripts/deviation.r"
)


class Stat(BaseModel):
    model_config = ConfigDict(frozen=True)

    mean: float
    sd: float


class Published(BaseModel):
    model_config = ConfigDict(frozen=True)

    runs: int
    makespan: Stat
    mean_waiting_time: Stat

    def metric(self, key: str) -> Stat | None:
        return getattr(self, key, None) if key in ("makespan", "mean_waiting_time") else None


def _p(runs: int, makespan: tuple[float, float], wait: tuple[float, float]) -> Published:
    return Published(runs=runs, makespan=Stat(mean=makespan[0], sd=makespan[1]),
                     mean_waiting_time=Stat(mean=wait[0], sd=wait[1]))  # fmt: skip


TABLE_4_1: dict[str, Published] = {
    "burst/emulated": _p(10, (2467.2, 26.8), (1076.7, 10.0)),
    "burst/batkube": _p(20, (2214.8, 0.5), (970.1, 12.3)),
    "spaced/emulated": _p(10, (2468.3, 4.9), (146.0, 1.6)),
    "spaced/batkube": _p(20, (2256.9, 16.4), (48.1, 9.2)),
    "kit/emulated": _p(1, (32556.2, 0.0), (2884.3, 0.0)),
    "kit/batkube": _p(20, (32554.7, 1.3), (2020.1, 926.4)),
}


def cell(key: str, metrics: list[str], digits: int) -> str:
    """A summary-table cell from the published figures: the metrics it has, "—" for the others."""
    entry = TABLE_4_1[key]
    parts = []
    for name in metrics:
        stat = entry.metric(name)
        if stat is None:
            parts.append("—")
        elif entry.runs == 1:
            parts.append(f"{stat.mean:.{digits}f}")
        else:
            parts.append(f"{stat.mean:.{digits}f} ± {stat.sd:.{digits}f}")
    return " / ".join(parts) + f" (published, {entry.runs} run{'s' if entry.runs > 1 else ''})"
