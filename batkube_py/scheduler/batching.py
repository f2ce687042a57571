"""OpportunisticBatching (kube-scheduler 1.35+, on by default in 1.37): whether a profile could use it.

After a cycle of a pod whose profile can sign it, upstream may place the next pod with the same
signature on the best remaining node of that cycle without filtering or scoring the others
(framework/runtime/batch.go, schedule_one.go). A profile signs pods only if every PreFilter, Filter,
PreScore and Score plugin implements SignPod and there are no extenders (framework.go,
computeBatchablePlugins); PodTopologySpread's SignPod refuses every pod while its default constraints
are non-empty (podtopologyspread/plugin.go), and `defaultingType: System` makes them non-empty. So the
default profile never batches, and neither does one with a custom (Python) plugin, which has no SignPod.

The twin does not model batching (its reuse also depends on 500 ms of wall time, `maxBatchAge`): a
1.37 profile on which it would be live is refused at load time rather than simulated differently.
"""

from __future__ import annotations

from typing import Any

from batkube_py.scheduler.framework import Plugin

_SIGNING_POINTS = ("preFilter", "filter", "preScore", "score")


def batching_live(points: dict[str, list[str]], args: dict[str, Any], registry: dict[str, type[Plugin]],
                  builtin: dict[str, type[Plugin]]) -> bool:  # fmt: skip
    """Whether kube-scheduler 1.37 would batch pods of a profile with these plugins and args."""
    names = {n for p in _SIGNING_POINTS for n in points.get(p, [])}
    if any(builtin.get(n) is not registry.get(n) for n in names):
        return False  # a custom plugin: no SignPod, nothing signs
    if "PodTopologySpread" in names:
        spread = args.get("PodTopologySpread")
        if spread is None or spread.defaultingType == "System" or spread.defaultConstraints:
            return False
    return True


def refusal(where: str, scheduler_name: str) -> str:
    return (
        f"{where} ({scheduler_name}): kube-scheduler 1.37 would batch this profile's pods "
        "(OpportunisticBatching: every filter and score plugin signs pods, PodTopologySpread has no default "
        "constraints), which the twin does not model; keep PodTopologySpread with `defaultingType: System` "
        "(or non-empty defaultConstraints), or run with --kube-version 1.32"
    )
