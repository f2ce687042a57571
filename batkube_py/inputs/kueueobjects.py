"""Kueue v1beta2 objects as pydantic models: the part of their API a queues file may use (queues.py).

Unknown fields are refused (extra="forbid"), so a field batkube does not honour never passes silently.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from batkube_py import quantities

_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class Meta(_Strict):
    name: str
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None

    @field_validator("name")
    @classmethod
    def _dns(cls, v: str) -> str:
        if len(v) > 253 or not _DNS.match(v):
            raise ValueError("a DNS subdomain name (lower-case letters, digits, '-', '.')")
        return v


Quantity = str | int | float


def amount(resource: str, value: Quantity) -> int:
    """Kueue's integer for a quantity of `resource`: milli-cores for cpu, else the value rounded up."""
    return quantities.milli_cpu(value) if resource == "cpu" else quantities.byte_count(value)


class ResourceQuota(_Strict):
    name: str
    nominal_quota: Quantity = Field(alias="nominalQuota")
    borrowing_limit: Quantity | None = Field(None, alias="borrowingLimit")
    lending_limit: Quantity | None = Field(None, alias="lendingLimit")


class FlavorQuotas(_Strict):
    name: str
    resources: list[ResourceQuota] = Field(min_length=1)


class ResourceGroup(_Strict):
    covered_resources: list[str] = Field(alias="coveredResources", min_length=1)
    flavors: list[FlavorQuotas] = Field(min_length=1)


class FairSharingWeight(_Strict):
    weight: Quantity | None = None


class Taint(_Strict):
    key: str
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class Toleration(_Strict):
    key: str | None = None
    operator: Literal["Equal", "Exists"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute", ""] | None = None
    toleration_seconds: int | None = Field(None, alias="tolerationSeconds")


class ResourceFlavorSpec(_Strict):
    node_labels: dict[str, str] = Field(default_factory=dict, alias="nodeLabels")
    node_taints: list[Taint] = Field(default_factory=list, alias="nodeTaints")
    tolerations: list[Toleration] = Field(default_factory=list)
    topology_name: str | None = Field(None, alias="topologyName")


class TopologyLevel(_Strict):
    node_label: str = Field(alias="nodeLabel")


class TopologySpec(_Strict):
    levels: list[TopologyLevel] = Field(min_length=1)


class CohortSpec(_Strict):
    parent_name: str | None = Field(None, alias="parentName")
    resource_groups: list[ResourceGroup] = Field(default_factory=list, alias="resourceGroups")
    fair_sharing: FairSharingWeight | None = Field(None, alias="fairSharing")


class LabelRequirement(_Strict):
    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] | None = None


class LabelSelector(_Strict):
    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: list[LabelRequirement] = Field(default_factory=list, alias="matchExpressions")

    def matches(self, labels: dict[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for r in self.match_expressions:
            has, value = r.key in labels, labels.get(r.key)
            ok = {
                "In": has and value in (r.values or ()),
                "NotIn": not has or value not in (r.values or ()),
                "Exists": has,
                "DoesNotExist": not has,
            }[r.operator]
            if not ok:
                return False
        return True


class FlavorFungibility(_Strict):
    when_can_borrow: Literal["MayStopSearch", "TryNextFlavor"] = Field("MayStopSearch", alias="whenCanBorrow")
    when_can_preempt: Literal["MayStopSearch", "TryNextFlavor"] = Field(
        "TryNextFlavor", alias="whenCanPreempt"
    )
    preference: Literal["BorrowingOverPreemption", "PreemptionOverBorrowing"] | None = None


class BorrowWithinCohort(_Strict):
    policy: Literal["Never", "LowerPriority"] = "Never"
    max_priority_threshold: int | None = Field(None, alias="maxPriorityThreshold")


class Preemption(_Strict):
    reclaim_within_cohort: Literal["Never", "LowerPriority", "Any"] = Field(
        "Never", alias="reclaimWithinCohort"
    )
    borrow_within_cohort: BorrowWithinCohort = Field(
        default_factory=BorrowWithinCohort, alias="borrowWithinCohort"
    )
    within_cluster_queue: Literal["Never", "LowerPriority", "LowerOrNewerEqualPriority"] = Field(
        "Never", alias="withinClusterQueue"
    )


class ClusterQueueSpec(_Strict):
    resource_groups: list[ResourceGroup] = Field(default_factory=list, alias="resourceGroups")
    cohort_name: str | None = Field(None, alias="cohortName")
    queueing_strategy: Literal["StrictFIFO", "BestEffortFIFO"] = Field(
        "BestEffortFIFO", alias="queueingStrategy"
    )
    namespace_selector: LabelSelector | None = Field(None, alias="namespaceSelector")
    flavor_fungibility: FlavorFungibility = Field(
        default_factory=FlavorFungibility, alias="flavorFungibility"
    )
    preemption: Preemption = Field(default_factory=Preemption)
    stop_policy: Literal["None"] = Field("None", alias="stopPolicy")
    fair_sharing: FairSharingWeight | None = Field(None, alias="fairSharing")
    admission_scope: dict[str, Any] | None = Field(None, alias="admissionScope")


class LocalQueueSpec(_Strict):
    cluster_queue: str = Field(alias="clusterQueue")
    stop_policy: Literal["None"] = Field("None", alias="stopPolicy")
    fair_sharing: FairSharingWeight | None = Field(None, alias="fairSharing")


class _Object(_Strict):
    api_version: Literal["kueue.x-k8s.io/v1beta2"] = Field(alias="apiVersion")
    metadata: Meta


class ResourceFlavor(_Object):
    kind: Literal["ResourceFlavor"]
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


class Topology(_Object):
    kind: Literal["Topology"]
    spec: TopologySpec


class Cohort(_Object):
    kind: Literal["Cohort"]
    spec: CohortSpec = Field(default_factory=CohortSpec)


class ClusterQueue(_Object):
    kind: Literal["ClusterQueue"]
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)


class LocalQueue(_Object):
    kind: Literal["LocalQueue"]
    spec: LocalQueueSpec


class WorkloadPriorityClass(_Object):
    kind: Literal["WorkloadPriorityClass"]
    value: int = Field(ge=-(2**31), lt=2**31)
    description: str | None = None


PreemptionStrategy = Literal["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
# pkg/config/validation.go: validStrategySets
STRATEGY_SETS = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)


class FairSharing(_Strict):
    """Configuration.fairSharing (v1beta2): its presence enables fair sharing; the strategies are required
    (v1beta2 has no default for them, and Kueue refuses to start without)."""

    preemption_strategies: tuple[PreemptionStrategy, ...] = Field(alias="preemptionStrategies")

    @field_validator("preemption_strategies")
    @classmethod
    def _valid_set(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        if tuple(v) not in STRATEGY_SETS:
            raise ValueError("one of " + "; ".join(", ".join(s) for s in STRATEGY_SETS) + f" (got {list(v)})")
        return v


class Configuration(_Strict):
    """Only the parts of Kueue's Configuration that change admission; the rest is the backend's."""

    api_version: Literal["config.kueue.x-k8s.io/v1beta2"] = Field(alias="apiVersion")
    kind: Literal["Configuration"]
    fair_sharing: FairSharing | None = Field(None, alias="fairSharing")
    admission_fair_sharing: dict[str, Any] | None = Field(None, alias="admissionFairSharing")


KINDS: dict[str, type[_Object]] = {
    c.__name__: c for c in (ResourceFlavor, Topology, Cohort, WorkloadPriorityClass, ClusterQueue, LocalQueue)
}
