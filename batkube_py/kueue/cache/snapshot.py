"""The scheduler's cache and its per-cycle snapshot: Kueue's pkg/cache/scheduler (cache.go, snapshot.go,
clusterqueue_snapshot.go, cohort_snapshot.go).

The cache holds the ClusterQueue and Cohort trees built from the queues file and every admitted
Workload with its usage. A cycle works on a Snapshot: the same trees with their usage copied, so that
what the cycle adds (admissions, reserved capacity) and what preemption simulates (removals) never
touches the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubernetes import client

from batkube_py import quantities
from batkube_py.inputs import kueueobjects as k
from batkube_py.inputs.queues import QueuesConfig, amount
from batkube_py.kueue.cache import tas
from batkube_py.kueue.cache.resource_node import (
    FR,
    Node,
    Quota,
    add_usage,
    available,
    potential_available,
    remove_usage,
    update_tree,
)
from batkube_py.kueue.workload import PODS, TASUsage, Workload


@dataclass(frozen=True)
class ResourceGroup:
    covered: tuple[str, ...]
    flavors: tuple[str, ...]
    label_keys: frozenset[str]  # the node label keys its flavors use (flavorSelector)


@dataclass(frozen=True)
class Flavor:
    name: str
    node_labels: dict[str, str]
    taints: tuple[client.V1Taint, ...]
    tolerations: tuple[client.V1Toleration, ...]
    topology: str | None = None  # topologyName: a TAS flavor


@dataclass(frozen=True)
class ClusterQueueSpec:
    """What the scheduler reads of a ClusterQueue besides its quotas."""

    name: str
    strategy: str
    groups: tuple[ResourceGroup, ...]
    preemption: k.Preemption
    fungibility: k.FlavorFungibility
    tas_only: bool = False  # every flavor is a TAS flavor: TAS applies to every workload (implied)

    def group_of(self, resource: str) -> ResourceGroup | None:
        """RGByResource."""
        return next((g for g in self.groups if resource in g.covered), None)

    @property
    def covers_pods(self) -> bool:
        return self.group_of(PODS) is not None

    @property
    def resources(self) -> list[str]:
        return [r for g in self.groups for r in g.covered]


def _quotas(groups: list[k.ResourceGroup]) -> dict[FR, Quota]:
    out = {}
    for group in groups:
        for fq in group.flavors:
            for rq in fq.resources:
                limits = [
                    None if v is None else amount(rq.name, v) for v in (rq.borrowing_limit, rq.lending_limit)
                ]
                out[(fq.name, rq.name)] = Quota(amount(rq.name, rq.nominal_quota), *limits)
    return out


def _weight(fs: k.FairSharingWeight | None) -> float:
    """parseFairWeight: 1 unless set."""
    return 1.0 if fs is None or fs.weight is None else quantities.as_float(fs.weight)


def flavor_of(obj: k.ResourceFlavor) -> Flavor:
    spec = obj.spec
    taints = tuple(client.V1Taint(key=t.key, value=t.value, effect=t.effect) for t in spec.node_taints)
    tolerations = tuple(
        client.V1Toleration(key=t.key, operator=t.operator, value=t.value, effect=t.effect or None)
        for t in spec.tolerations
    )
    return Flavor(obj.metadata.name, dict(spec.node_labels), taints, tolerations, spec.topology_name)


class Cache:
    def __init__(self, cfg: QueuesConfig):
        fs = cfg.configuration.fair_sharing if cfg.configuration is not None else None
        # the preemption strategies when fair sharing is on (pkg/scheduler/preemption/fairsharing)
        self.fair_sharing: tuple[str, ...] | None = None if fs is None else tuple(fs.preemption_strategies)
        self.flavors = {name: flavor_of(f) for name, f in cfg.flavors.items()}
        self.specs: dict[str, ClusterQueueSpec] = {}
        self.cqs: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        for name in sorted(cfg.cluster_queues):
            spec = cfg.cluster_queues[name].spec
            groups = tuple(
                ResourceGroup(
                    tuple(g.covered_resources),
                    tuple(f.name for f in g.flavors),
                    frozenset(key for f in g.flavors for key in self.flavors[f.name].node_labels),
                )
                for g in spec.resource_groups
            )
            tas_only = all(self.flavors[f].topology is not None for g in groups for f in g.flavors)
            self.specs[name] = ClusterQueueSpec(
                name, spec.queueing_strategy, groups, spec.preemption, spec.flavor_fungibility, tas_only
            )
            self.cqs[name] = Node(
                name, True, quotas=_quotas(spec.resource_groups), weight=_weight(spec.fair_sharing)
            )
            if spec.cohort_name is not None:
                self._cohort(cfg, spec.cohort_name).child_cqs.append(self.cqs[name])
                self.cqs[name].parent = self.cohorts[spec.cohort_name]
        for root in self.roots():
            update_tree(root)
        self.workloads: dict[str, dict[str, Workload]] = {name: {} for name in self.cqs}
        self.lq_to_cq = {name: lq.spec.cluster_queue for name, lq in cfg.local_queues.items()}
        self.levels = {n: tuple(lv.node_label for lv in t.spec.levels) for n, t in cfg.topologies.items()}
        self.tas_usage: dict[str, dict[tas.Key, tas.Requests]] = {
            f.name: {} for f in self.flavors.values() if f.topology is not None
        }
        # the cluster's schedulable Ready nodes and each node's non-TAS usage: set by the embedded backend
        self.cluster: Callable[[], tuple[list[tas.NodeInfo], dict[str, tas.Requests]]] | None = None
        self.tas_trees: dict[str, tas.TASFlavorSnapshot] | None = None  # this instant's, built once

    def _cohort(self, cfg: QueuesConfig, name: str) -> Node:
        """The cohort named `name`, an object of the file or implicit (named by a ClusterQueue or a
        child Cohort only), linked to its parent."""
        if name in self.cohorts:
            return self.cohorts[name]
        obj = cfg.cohorts.get(name)
        quotas = _quotas(obj.spec.resource_groups) if obj else {}
        weight = _weight(obj.spec.fair_sharing) if obj else 1.0
        node = self.cohorts[name] = Node(name, False, quotas=quotas, weight=weight)
        if obj is not None and obj.spec.parent_name is not None:
            parent = self._cohort(cfg, obj.spec.parent_name)
            parent.child_cohorts.append(node)
            node.parent = parent
        return node

    def roots(self) -> list[Node]:
        return [n for n in [*self.cohorts.values(), *self.cqs.values()] if n.parent is None]

    def same_tree(self, cq: str) -> list[str]:
        """The ClusterQueues sharing cq's root cohort (cq alone when it has none)."""
        return [n.name for n in self.cqs[cq].root().subtree_cqs()]

    def admit(self, wl: Workload) -> None:
        """Assume the workload admitted (its usage is set)."""
        assert wl.usage is not None
        self.workloads[wl.cluster_queue][wl.name] = wl
        for fr, v in wl.usage.items():
            add_usage(self.cqs[wl.cluster_queue], fr, v)
        self._tas(wl, 1)

    def release(self, wl: Workload) -> None:
        """The workload's pods are gone: its quota is free again."""
        if self.workloads[wl.cluster_queue].pop(wl.name, None) is None:
            return
        for fr, v in (wl.usage or {}).items():
            remove_usage(self.cqs[wl.cluster_queue], fr, v)
        self._tas(wl, -1)

    def _tas(self, wl: Workload, sign: int) -> None:
        if wl.tas is not None:
            usage = self.tas_usage[wl.tas.flavor]
            for key, u in wl.tas.usage.items():
                tas.add(usage.setdefault(key, {}), u, sign)

    def tas_snapshots(self) -> dict[str, tas.TASFlavorSnapshot]:
        """One TAS snapshot per TAS flavor, over the nodes carrying its labels and every level's."""
        if not self.tas_usage:
            return {}
        if self.cluster is None:
            raise RuntimeError("topology-aware flavors need the cluster's nodes (Cache.cluster)")
        if self.tas_trees is None:  # the cluster does not change while the cycles of an instant run
            nodes, non_tas = self.cluster()
            self.tas_trees = {}
            for name in self.tas_usage:
                f = self.flavors[name]
                levels = self.levels[f.topology]
                mine = [n for n in nodes if all(n.labels.get(k) == v for k, v in f.node_labels.items())
                        and all(k in n.labels for k in levels)]  # fmt: skip
                self.tas_trees[name] = tas.TASFlavorSnapshot(f.topology, levels, f.tolerations, mine, non_tas)
        for name, tree in self.tas_trees.items():  # each cycle starts from the cache's TAS usage
            tree.set_usage(self.tas_usage[name])
        return self.tas_trees

    def snapshot(self) -> Snapshot:
        return Snapshot(self)


def _clone(node: Node, parent: Node | None, into: dict[str, Node]) -> Node:
    copy = Node(node.name, node.is_cq, parent, node.quotas, node.subtree, dict(node.usage))
    copy.weight = node.weight
    copy.child_cohorts = [_clone(c, copy, into) for c in node.child_cohorts]
    copy.child_cqs = [_clone(c, copy, into) for c in node.child_cqs]
    if node.is_cq:
        into[node.name] = copy
    return copy


class Snapshot:
    """One cycle's view of the cache; its trees are copies, its workloads the cache's own objects."""

    def __init__(self, cache: Cache):
        self.cache = cache
        self.specs = cache.specs
        self.flavors = cache.flavors
        self.fair_sharing = cache.fair_sharing
        self.cqs: dict[str, Node] = {}
        for root in cache.roots():
            _clone(root, None, self.cqs)
        self.workloads = dict(cache.workloads)  # each ClusterQueue's copied when first changed
        self._copied: set[str] = set()
        self.tas = cache.tas_snapshots()  # per TAS flavor, shared by the ClusterQueues using it

    def _own(self, cq: str) -> dict[str, Workload]:
        if cq not in self._copied:
            self.workloads[cq] = dict(self.workloads[cq])
            self._copied.add(cq)
        return self.workloads[cq]

    def add_usage(self, cq: str, usage: dict[FR, int], placed: TASUsage | None = None) -> None:
        for fr, v in usage.items():
            add_usage(self.cqs[cq], fr, v)
        if placed is not None:
            self.tas[placed.flavor].add_usage(placed.usage)

    def remove_workload(self, wl: Workload) -> None:
        del self._own(wl.cluster_queue)[wl.name]
        for fr, v in (wl.usage or {}).items():
            remove_usage(self.cqs[wl.cluster_queue], fr, v)
        if wl.tas is not None:
            self.tas[wl.tas.flavor].add_usage(wl.tas.usage, -1)

    def add_workload(self, wl: Workload) -> None:
        self._own(wl.cluster_queue)[wl.name] = wl
        self.add_usage(wl.cluster_queue, wl.usage or {}, wl.tas)

    def simulate_removal(self, wls: Iterable[Workload]) -> Callable[[], None]:
        """SimulateWorkloadRemoval: remove them, and the function that puts them back."""
        gone = [w for w in dict.fromkeys(wls) if w.name in self.workloads[w.cluster_queue]]
        for w in gone:
            self.remove_workload(w)

        def revert() -> None:
            for w in gone:
                self.add_workload(w)

        return revert

    def fits(self, cq: str, usage: dict[FR, int], placed: TASUsage | None = None) -> bool:
        """ClusterQueueSnapshot.Fits: every flavor-resource within what the ClusterQueue may still use,
        and every topology domain still holding its pods."""
        node = self.cqs[cq]
        if not all(v <= available(node, fr) for fr, v in usage.items()):
            return False
        return placed is None or self.tas[placed.flavor].fits(placed.assignment, placed.per_pod)

    def available(self, cq: str, fr: FR) -> int:
        return available(self.cqs[cq], fr)

    def potential(self, cq: str, fr: FR) -> int:
        return potential_available(self.cqs[cq], fr)
