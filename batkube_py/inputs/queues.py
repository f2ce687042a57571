"""`--queues FILE`: Kueue v1beta2 objects (ResourceFlavor, Topology, Cohort, WorkloadPriorityClass,
ClusterQueue, LocalQueue) and optionally a `Configuration` holding only `fairSharing` /
`admissionFairSharing`, validated once for both backends.

The apiserver backend applies `QueuesConfig.documents` to the real Kueue; the embedded backend's twin
(batkube_py/kueue) reads the same models. Each problem is one QueuesError line naming the file, the
object (kind/name), the field and what was expected. Fields batkube has no way to honour (admission
checks, stop policies, LocalQueues outside namespace "default", where every pod lives) are refused here;
what only the twin lacks (fair sharing, admission fair sharing, preemption beside topology-aware flavors)
is refused by `twin_refusal`, so a user never gets a silently different Kueue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from batkube_py import quantities, safeyaml
from batkube_py.inputs.kueueobjects import (
    KINDS,
    ClusterQueue,
    Cohort,
    Configuration,
    LocalQueue,
    ResourceFlavor,
    ResourceGroup,
    ResourceQuota,
    Topology,
    WorkloadPriorityClass,
    amount,
)

API_VERSION = "kueue.x-k8s.io/v1beta2"
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta2"
NAMESPACE = "default"  # the adapter's pods' namespace (adapter/translate.py)
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
# a PodSet's topology request, as pod annotations (a job's `topology` field)
REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
APPLY_ORDER = ("ResourceFlavor", "Topology", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")
HOSTNAME = "kubernetes.io/hostname"
UNMODELLED = "not modelled by batkube's Kueue twin"


class QueuesError(ValueError):
    """A queues file that is not what batkube can run: one line, file, object, field, expected."""


class QueuesConfig(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    flavors: dict[str, ResourceFlavor]
    topologies: dict[str, Topology]
    cohorts: dict[str, Cohort]
    priority_classes: dict[str, WorkloadPriorityClass]
    cluster_queues: dict[str, ClusterQueue]
    local_queues: dict[str, LocalQueue]
    configuration: Configuration | None = None

    @property
    def fair_sharing(self) -> bool:
        """Kueue enables fair sharing by the mere presence of the section."""
        return self.configuration is not None and self.configuration.fair_sharing is not None

    @property
    def admission_fair_sharing(self) -> bool:
        return self.configuration is not None and self.configuration.admission_fair_sharing is not None

    def local_queue(self, name: str) -> LocalQueue | None:
        return self.local_queues.get(name)

    @property
    def documents(self) -> list[dict[str, Any]]:
        """The Kueue API objects in apply order, LocalQueues in namespace "default"."""
        out = []
        for kind in APPLY_ORDER:
            for obj in self._of_kind(kind).values():
                doc = obj.model_dump(by_alias=True, exclude_none=True, exclude_defaults=False)
                if kind == "LocalQueue":
                    doc["metadata"]["namespace"] = NAMESPACE
                if kind == "ResourceFlavor":  # an empty list is not an absent one to Kueue's CEL rules
                    doc["spec"] = {k: v for k, v in doc["spec"].items() if v not in ([], {})}
                out.append(doc)
        return out

    def _of_kind(self, kind: str) -> dict[str, Any]:
        return {
            "ResourceFlavor": self.flavors, "Topology": self.topologies, "Cohort": self.cohorts,
            "WorkloadPriorityClass": self.priority_classes, "ClusterQueue": self.cluster_queues,
            "LocalQueue": self.local_queues,
        }[kind]  # fmt: skip

    def afs_refusal(self) -> str | None:
        """Admission fair sharing is refused on both backends: Kueue v0.17.0 folds a LocalQueue's usage
        on the wall clock (its Workload controller has no clock option, and its LocalQueue controller
        re-samples after wall-clock delays), so no run could reproduce it (docs/kueue.md)."""
        where = f"{self.path}: "
        why = "admission fair sharing is not run by batkube (Kueue v0.17.0 decays usage on the wall clock)"
        if self.admission_fair_sharing:
            return f"{where}Configuration: field 'admissionFairSharing': {why}"
        for cq in self.cluster_queues.values():
            if cq.spec.admission_scope is not None:
                return f"{where}ClusterQueue/{cq.metadata.name}: field 'spec.admissionScope': {why}"
        return None

    def twin_refusal(self) -> str | None:
        """Why the embedded twin cannot run this file (what the real Kueue would do and it does not)."""
        if (why := self.afs_refusal()) is not None:
            return why
        where = f"{self.path}: "
        if tas := sorted(f.metadata.name for f in self.flavors.values() if f.spec.topology_name is not None):
            for cq in self.cluster_queues.values():
                p = cq.spec.preemption
                if (p.within_cluster_queue, p.reclaim_within_cohort, p.borrow_within_cohort.policy) != (
                    ("Never",) * 3
                ):
                    return (
                        f"{where}ClusterQueue/{cq.metadata.name}: field 'spec.preemption': preemption beside "
                        f"topology-aware flavors ({', '.join(tas)}) is {UNMODELLED} yet"
                    )
        return None


def _fail(path: Path, what: str, field: str, expected: str) -> QueuesError:
    return QueuesError(f"{path}: {what}: field {field!r}: expected {expected}")


def load_queues(path: Path) -> QueuesConfig:
    """The queues file, validated; raises QueuesError (one line) on the first problem."""
    path = Path(path)
    try:
        docs = safeyaml.load_all_text(safeyaml.read_text(path), str(path))
    except safeyaml.YamlError as exc:
        raise QueuesError(str(exc)) from None
    objects: dict[str, dict[str, Any]] = {k: {} for k in APPLY_ORDER}
    configuration = None
    for i, doc in enumerate(d for d in docs if d is not None):
        where = f"document {i + 1}"
        if not isinstance(doc, dict):
            raise _fail(path, where, "-", "a Kueue object (a mapping with apiVersion, kind, metadata)")
        kind = doc.get("kind")
        if kind == "Configuration":
            configuration = _validate(path, "Configuration", Configuration, doc)
            continue
        if kind not in KINDS:
            raise _fail(
                path, where, "kind", f"one of {', '.join(APPLY_ORDER)} or Configuration (got {kind!r})"
            )
        name = doc.get("metadata", {}).get("name") if isinstance(doc.get("metadata"), dict) else None
        obj = _validate(path, f"{kind}/{name or '?'}", KINDS[kind], doc)
        if obj.metadata.name in objects[kind]:
            raise _fail(path, f"{kind}/{obj.metadata.name}", "metadata.name", "a name not used twice")
        objects[kind][obj.metadata.name] = obj
    cfg = QueuesConfig(
        path=str(path), flavors=objects["ResourceFlavor"], topologies=objects["Topology"],
        cohorts=objects["Cohort"], priority_classes=objects["WorkloadPriorityClass"],
        cluster_queues=objects["ClusterQueue"], local_queues=objects["LocalQueue"],
        configuration=configuration,
    )  # fmt: skip
    _check(cfg, path)
    return cfg


def _validate(path: Path, what: str, model: type[BaseModel], doc: dict) -> Any:
    try:
        return model.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"]) or "-"
        if err["type"] == "extra_forbidden":
            raise _fail(
                path, what, loc, f"no such field ({UNMODELLED} or not a Kueue v1beta2 field)"
            ) from None
        if err["type"] == "missing":
            raise _fail(path, what, loc, "a value (Kueue v1beta2 requires this field)") from None
        raise _fail(
            path, what, loc, err["msg"].removeprefix("Input should be ").removeprefix("Value error, ")
        ) from None


def _check(cfg: QueuesConfig, path: Path) -> None:
    """What Kueue's webhooks and controllers would refuse or leave inactive, refused here instead."""
    for lq in cfg.local_queues.values():
        what = f"LocalQueue/{lq.metadata.name}"
        if lq.metadata.namespace not in (None, NAMESPACE):
            raise _fail(path, what, "metadata.namespace", f"{NAMESPACE!r}, where batkube's pods live")
        if lq.spec.cluster_queue not in cfg.cluster_queues:
            raise _fail(path, what, "spec.clusterQueue", "the name of a ClusterQueue of the file")
    for obj in [*cfg.cohorts.values(), *cfg.cluster_queues.values()]:
        weight = obj.spec.fair_sharing.weight if obj.spec.fair_sharing is not None else None
        if weight is not None:
            try:
                quantities.as_float(weight)
            except quantities.QuantityError as exc:
                raise _fail(path, f"{obj.kind}/{obj.metadata.name}", "spec.fairSharing.weight",
                            f"a non-negative Kubernetes quantity ({exc})") from None  # fmt: skip
    for cohort in cfg.cohorts.values():
        _check_groups(cfg, path, f"Cohort/{cohort.metadata.name}", cohort.spec.resource_groups,
                      cohort.spec.parent_name is not None)  # fmt: skip
    _check_cycles(cfg, path)
    for cq in cfg.cluster_queues.values():
        what, spec = f"ClusterQueue/{cq.metadata.name}", cq.spec
        _check_groups(cfg, path, what, spec.resource_groups, spec.cohort_name is not None)
        if spec.namespace_selector is None:
            why = "a selector ({} for every namespace): without one Kueue admits nothing here"
            raise _fail(path, what, "spec.namespaceSelector", why)
        if not spec.namespace_selector.matches({"kubernetes.io/metadata.name": NAMESPACE}):
            raise _fail(path, what, "spec.namespaceSelector", f"a selector matching namespace {NAMESPACE!r}")
        p, f = spec.preemption, spec.flavor_fungibility
        if p.reclaim_within_cohort == "Never" and p.borrow_within_cohort.policy != "Never":
            raise _fail(path, what, "spec.preemption.borrowWithinCohort.policy",
                        "Never while reclaimWithinCohort is Never")  # fmt: skip
        if f.preference is not None and (f.when_can_borrow, f.when_can_preempt) != ("TryNextFlavor",) * 2:
            why = "no preference unless whenCanBorrow and whenCanPreempt are both TryNextFlavor"
            raise _fail(path, what, "spec.flavorFungibility.preference", why)
    for topology in cfg.topologies.values():
        keys = [lv.node_label for lv in topology.spec.levels]
        what = f"Topology/{topology.metadata.name}"
        if len(keys) > 16 or len(set(keys)) != len(keys):
            raise _fail(path, what, "spec.levels", "at most 16 levels, each nodeLabel once")
        if HOSTNAME in keys[:-1]:
            raise _fail(path, what, "spec.levels", f"{HOSTNAME} only as the last (lowest) level")
    for flavor in cfg.flavors.values():
        topo = flavor.spec.topology_name
        if topo is not None and topo not in cfg.topologies:
            raise _fail(path, f"ResourceFlavor/{flavor.metadata.name}", "spec.topologyName",
                        "the name of a Topology of the file")  # fmt: skip
        if topo is not None and not flavor.spec.node_labels:
            raise _fail(path, f"ResourceFlavor/{flavor.metadata.name}", "spec.nodeLabels",
                        "at least one node label when topologyName is set (Kueue's rule)")  # fmt: skip


def _check_groups(
    cfg: QueuesConfig, path: Path, what: str, groups: list[ResourceGroup], parent: bool
) -> None:
    covered: set[str] = set()
    flavors: set[str] = set()
    for g, group in enumerate(groups):
        at = f"spec.resourceGroups.{g}"
        if dup := covered & set(group.covered_resources):
            raise _fail(path, what, f"{at}.coveredResources", f"each resource in one group only ({min(dup)})")
        covered |= set(group.covered_resources)
        for i, fq in enumerate(group.flavors):
            fat = f"{at}.flavors.{i}"
            if fq.name not in cfg.flavors:
                raise _fail(path, what, f"{fat}.name", "the name of a ResourceFlavor of the file")
            if fq.name in flavors:
                raise _fail(path, what, f"{fat}.name", f"each flavor in one group only ({fq.name})")
            flavors.add(fq.name)
            if [r.name for r in fq.resources] != group.covered_resources:
                raise _fail(path, what, f"{fat}.resources",
                            f"quotas for {group.covered_resources}, in that order")  # fmt: skip
            for j, rq in enumerate(fq.resources):
                _check_quota(path, what, f"{fat}.resources.{j}", rq, parent)


def _check_quota(path: Path, what: str, at: str, rq: ResourceQuota, parent: bool) -> None:
    values = {}
    for key, value in (("nominalQuota", rq.nominal_quota), ("borrowingLimit", rq.borrowing_limit),
                       ("lendingLimit", rq.lending_limit)):  # fmt: skip
        if value is None:
            continue
        if key != "nominalQuota" and not parent:
            raise _fail(
                path, what, f"{at}.{key}", "no limit outside a cohort (cohortName / parentName unset)"
            )
        try:
            values[key] = amount(rq.name, value)
        except quantities.QuantityError as exc:
            raise _fail(path, what, f"{at}.{key}", f"a non-negative Kubernetes quantity ({exc})") from None
    if values.get("lendingLimit", 0) > values["nominalQuota"]:
        raise _fail(path, what, f"{at}.lendingLimit", "at most nominalQuota")


def _check_cycles(cfg: QueuesConfig, path: Path) -> None:
    for name in cfg.cohorts:
        seen = [name]
        while (parent := (c.spec.parent_name if (c := cfg.cohorts.get(seen[-1])) else None)) is not None:
            if parent in seen:
                raise _fail(path, f"Cohort/{name}", "spec.parentName",
                            f"a cohort tree without cycles ({' -> '.join([*seen, parent])})")  # fmt: skip
            seen.append(parent)
