"""Typed plugin arguments (kubescheduler.config.k8s.io/v1 *Args) with upstream defaults and validation.

Each model checks what upstream's validation_pluginargs.go checks, raising ValueError with a message
that config.py prefixes with the field path, so users get the same refusals kube-scheduler gives.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from batkube_py.scheduler.goint import parse_int64

_STRICT = ConfigDict(extra="forbid", populate_by_name=True)
_INCLUSION = {"Honor", "Ignore"}
_NODE_OPS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}


class _Args(BaseModel):
    model_config = _STRICT
    apiVersion: str | None = None
    kind: str | None = None


class ResourceSpec(BaseModel):
    model_config = _STRICT
    name: str
    weight: int = 0  # 0 means "unset": defaulted to 1 below, as SetDefaults_* do


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(name="cpu", weight=1), ResourceSpec(name="memory", weight=1)]


def _defaulted(resources: list[ResourceSpec], low: int, high: int) -> list[ResourceSpec]:
    out = [ResourceSpec(name=r.name, weight=r.weight or 1) for r in resources] or _default_resources()
    for i, r in enumerate(out):
        if not low <= r.weight <= high:
            raise ValueError(
                f"resources[{i}].weight: resource weight of {r.name} not in valid range [{low}, {high}]"
            )
    return out


class UtilizationShapePoint(BaseModel):
    model_config = _STRICT
    utilization: int
    score: int


class RequestedToCapacityRatioParam(BaseModel):
    model_config = _STRICT
    shape: list[UtilizationShapePoint] = Field(default_factory=list)

    @model_validator(mode="after")
    def _shape(self) -> RequestedToCapacityRatioParam:
        if not self.shape:
            raise ValueError("shape: at least one point must be specified")
        for i, p in enumerate(self.shape):
            if not 0 <= p.utilization <= 100:
                raise ValueError(f"shape[{i}].utilization: not in valid range [0, 100]")
            if i and p.utilization <= self.shape[i - 1].utilization:
                raise ValueError(f"shape[{i}].utilization: values must be sorted in increasing order")
            if not 0 <= p.score <= 10:
                raise ValueError(f"shape[{i}].score: not in valid range [0, 10]")
        return self


class ScoringStrategy(BaseModel):
    model_config = _STRICT
    type: Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"] = "LeastAllocated"
    resources: list[ResourceSpec] = Field(default_factory=_default_resources)
    requestedToCapacityRatio: RequestedToCapacityRatioParam | None = None

    @model_validator(mode="after")
    def _check(self) -> ScoringStrategy:
        self.resources = _defaulted(self.resources, 1, 100)
        if self.type == "RequestedToCapacityRatio" and self.requestedToCapacityRatio is None:
            raise ValueError("requestedToCapacityRatio: required for type RequestedToCapacityRatio")
        return self


class NodeResourcesFitArgs(_Args):
    ignoredResources: list[str] = Field(default_factory=list)
    ignoredResourceGroups: list[str] = Field(default_factory=list)
    scoringStrategy: ScoringStrategy = Field(default_factory=ScoringStrategy)


class NodeResourcesBalancedAllocationArgs(_Args):
    resources: list[ResourceSpec] = Field(default_factory=_default_resources)

    @model_validator(mode="after")
    def _check(self) -> NodeResourcesBalancedAllocationArgs:
        self.resources = _defaulted(self.resources, 1, 1)
        return self


class InterPodAffinityArgs(_Args):
    hardPodAffinityWeight: int = 1
    ignorePreferredTermsOfExistingPods: bool = False

    @field_validator("hardPodAffinityWeight")
    @classmethod
    def _weight(cls, v: int) -> int:
        if not 0 <= v <= 100:
            raise ValueError("not in valid range [0, 100]")
        return v


class DefaultPreemptionArgs(_Args):
    minCandidateNodesPercentage: int = 10
    minCandidateNodesAbsolute: int = 100

    @model_validator(mode="after")
    def _check(self) -> DefaultPreemptionArgs:
        if not 0 <= self.minCandidateNodesPercentage <= 100:
            raise ValueError("minCandidateNodesPercentage: not in valid range [0, 100]")
        if self.minCandidateNodesAbsolute < 0:
            raise ValueError("minCandidateNodesAbsolute: not in valid range [0, inf)")
        if self.minCandidateNodesPercentage == 0 and self.minCandidateNodesAbsolute == 0:
            raise ValueError(
                "minCandidateNodesPercentage: cannot be zero at the same time as minCandidateNodesAbsolute"
            )
        return self


class TopologySpreadConstraintArg(BaseModel):
    model_config = ConfigDict(extra="allow")
    maxSkew: int
    topologyKey: str
    whenUnsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"]
    labelSelector: Any = None
    minDomains: int | None = None
    nodeAffinityPolicy: str | None = None
    nodeTaintsPolicy: str | None = None

    @model_validator(mode="after")
    def _check(self) -> TopologySpreadConstraintArg:
        if self.maxSkew <= 0:
            raise ValueError("maxSkew: must be greater than zero")
        if not self.topologyKey:
            raise ValueError("topologyKey: Required value")
        if self.labelSelector is not None:
            raise ValueError("labelSelector: constraint must not define a selector (it is deduced per pod)")
        for name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            v = getattr(self, name)
            if v is not None and v not in _INCLUSION:
                raise ValueError(f'{name}: Unsupported value: {v!r}: supported values: "Honor", "Ignore"')
        return self


class PodTopologySpreadArgs(_Args):
    defaultConstraints: list[TopologySpreadConstraintArg] = Field(default_factory=list)
    defaultingType: Literal["System", "List"] = "System"
    # batkube extension: our pods have no owners, so upstream's owner-derived selector is always empty and
    # default constraints never apply. "PodLabels" selects pods with the incoming pod's own labels instead.
    defaultSelector: Literal["Owners", "PodLabels"] = Field("Owners", alias="x-batkube-defaultSelector")

    @model_validator(mode="after")
    def _check(self) -> PodTopologySpreadArgs:
        if self.defaultingType == "System" and self.defaultConstraints:
            raise ValueError('defaultingType: must be "List" when defaultConstraints are not empty')
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.defaultConstraints):
            key = (c.topologyKey, c.whenUnsatisfiable)
            if key in seen:
                raise ValueError(f"defaultConstraints[{i}]: Duplicate value: {{{key[0]}, {key[1]}}}")
            seen.add(key)
        return self


class NodeAffinityArgs(_Args):
    addedAffinity: dict[str, Any] | None = None

    @field_validator("addedAffinity")
    @classmethod
    def _affinity(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        req = v.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is not None:
            terms = req.get("nodeSelectorTerms") or []
            if not terms:
                raise ValueError(
                    "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
                    "must have at least one term"
                )
            for i, t in enumerate(terms):
                _check_term(t, f"requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]")
        for i, p in enumerate(v.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
            where = f"preferredDuringSchedulingIgnoredDuringExecution[{i}]"
            if not 1 <= int(p.get("weight", 0)) <= 100:
                raise ValueError(f"{where}.weight: must be in the range 1-100")
            _check_term(p.get("preference") or {}, f"{where}.preference")
        return v


def _check_term(term: dict[str, Any], where: str) -> None:
    for kind in ("matchExpressions", "matchFields"):
        for j, r in enumerate(term.get(kind) or []):
            op, values = r.get("operator"), r.get("values") or []
            if op not in _NODE_OPS:
                raise ValueError(f"{where}.{kind}[{j}].operator: Unsupported value: {op!r}")
            if op in ("In", "NotIn") and not values:
                raise ValueError(f"{where}.{kind}[{j}].values: must be specified for '{op}'")
            if op in ("Exists", "DoesNotExist") and values:
                raise ValueError(f"{where}.{kind}[{j}].values: may not be specified for '{op}'")
            if op in ("Gt", "Lt") and (len(values) != 1 or parse_int64(str(values[0])) is None):
                raise ValueError(f"{where}.{kind}[{j}].values: must be a single integer for '{op}'")
            if kind == "matchFields" and r.get("key") != "metadata.name":
                raise ValueError(f"{where}.{kind}[{j}].key: Unsupported value: {r.get('key')!r}")


ARGS: dict[str, type[_Args]] = {
    "NodeResourcesFit": NodeResourcesFitArgs,
    "NodeResourcesBalancedAllocation": NodeResourcesBalancedAllocationArgs,
    "InterPodAffinity": InterPodAffinityArgs,
    "DefaultPreemption": DefaultPreemptionArgs,
    "PodTopologySpread": PodTopologySpreadArgs,
    "NodeAffinity": NodeAffinityArgs,
}
