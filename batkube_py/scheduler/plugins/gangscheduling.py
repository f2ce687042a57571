"""GangScheduling (kube-scheduler 1.37, GenericWorkload on): the quorum gate, PlacementFeasible, Permit.

Upstream (framework/plugins/gangscheduling/gangscheduling.go) keeps a gang's pods out of every cycle
until the scheduler knows minCount of them (PreEnqueue), stops a group cycle as soon as the pods left
cannot reach minCount (PlacementFeasible), and holds assumed pods at Permit until minCount of the group
are assumed or bound, for at most 5 minutes. A basic group counts as minCount 1.
"""

from __future__ import annotations

NAME = "GangScheduling"
PERMIT_TIMEOUT = 300.0  # permitTimeoutDuration; upstream caps any Permit wait at 15 min (maxTimeout)

SUCCESS, WAIT, UNSCHEDULABLE = "Success", "Wait", "Unschedulable"


def pre_enqueue(known: int, min_count: int, group_known: bool) -> str | None:
    """None when the group's pods may be queued, else upstream's UnschedulableAndUnresolvable message.
    `known`: every non-terminal pod of the group the scheduler knows, bound ones included."""
    if not group_known:
        return "waiting for pods's pod group to appear"
    if known < min_count:
        return f"waiting for minCount pods from the pod group to appear ({known}/{min_count})"
    return None


def placement_feasible(scheduled: int, remaining: int, min_count: int) -> str:
    """`scheduled`: the group's pods assumed or bound, this cycle's successes included; `remaining`:
    the pods this cycle has still to try."""
    if scheduled + remaining < min_count:
        return UNSCHEDULABLE
    if scheduled < min_count:
        return WAIT
    return SUCCESS


def permit(scheduled: int, min_count: int) -> str:
    """Allow once minCount of the group are assumed or bound; until then the assumed pods wait (up to
    PERMIT_TIMEOUT on the simulated clock)."""
    return SUCCESS if scheduled >= min_count else WAIT
