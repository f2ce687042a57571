"""Topology-aware scheduling: Kueue's pkg/cache/scheduler/tas_flavor_snapshot.go (with tas_flavor.go and
tas_nodes_cache.go) for the pod integration's one PodSet per workload, no slices, no leader.

A TAS flavor's nodes (schedulable, Ready, carrying the flavor's nodeLabels and every level's label) form
a tree of domains, one level per Topology level. A leaf's capacity is its nodes' allocatable minus the
requests of the non-TAS pods bound there minus the usage of the TAS workloads admitted there. To place
a PodSet, phase 1 counts bottom-up how many of its pods fit in each domain; phase 2 picks, at the
requested level, one domain that holds them all (BestFit: the fullest one that still fits; for an
unconstrained request, LeastFreeCapacity, the TASProfileMixed default of v0.17.0), climbs a level when
none does and the level is only preferred, and descends level by level onto the fewest domains. The
result is a count of pods per lowest-level domain (the TopologyAssignment).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kubernetes import client

from batkube_py.scheduler.plugins.helpers import DO_NOT_SCHEDULE_EFFECTS, first_untolerated

HOSTNAME = "kubernetes.io/hostname"
PODS = "pods"
MAX_INT32 = 2**31 - 1

Key = tuple[str, ...]  # a leaf's id: its hostname alone when the lowest level is the hostname
Requests = dict[str, int]


@dataclass(frozen=True)
class TopologyRequest:
    """A PodSet's topology request (the podset-*-topology annotations); level None is unconstrained."""

    level: str | None
    required: bool = False


@dataclass(frozen=True)
class NodeInfo:
    name: str
    labels: Mapping[str, str]
    taints: tuple[client.V1Taint, ...]
    allocatable: Mapping[str, int]


@dataclass(frozen=True)
class TopologyAssignment:
    levels: tuple[str, ...]
    domains: tuple[tuple[Key, int], ...]  # (level values, pods), sorted by values

    def usage(self, per_pod: Requests) -> dict[Key, Requests]:
        """The TAS usage it charges per leaf: the pods' requests and their count."""
        return {values: {**{r: v * n for r, v in per_pod.items()}, PODS: per_pod.get(PODS, 0) * n + n}
                for values, n in self.domains}  # fmt: skip

    def node_selectors(self) -> list[dict[str, str]]:
        """One nodeSelector per pod, domain by domain (the topology ungater's greedy assignment)."""
        return [dict(zip(self.levels, values, strict=True)) for values, n in self.domains for _ in range(n)]


def count_in(requests: Requests, capacity: Requests) -> tuple[int, str]:
    """CountInWithLimitingResource: how many times the requests fit (Go's truncating division)."""
    best, limiting = None, ""
    for r in sorted(requests):
        v = requests[r]
        if r not in capacity and v != 0:
            return 0, r
        n = MAX_INT32 if v == 0 else _trunc_div(capacity[r], v)
        if best is None or n < best:
            best, limiting = n, r
    return (MAX_INT32 if best is None else best), limiting


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def add(into: Requests, other: Mapping[str, int], sign: int = 1) -> None:
    for r, v in other.items():
        into[r] = into.get(r, 0) + sign * v


def requirement_ok(labels: dict[str, str], req: client.V1NodeSelectorRequirement) -> bool:
    has, value = req.key in labels, labels.get(req.key)
    op, values = req.operator, req.values or []
    if op in ("Gt", "Lt"):
        try:
            n, bound = int(value or ""), int(values[0])
        except (ValueError, IndexError):
            return False
        return n > bound if op == "Gt" else n < bound
    return {"In": has and value in values, "NotIn": not has or value not in values,
            "Exists": has, "DoesNotExist": not has}.get(op, False)  # fmt: skip


def node_matches(labels: Mapping[str, str], pod: client.V1Pod) -> bool:
    """The pod's nodeSelector and required node affinity (match expressions on labels) on a node."""
    spec = pod.spec
    if any(labels.get(k) != v for k, v in (spec.node_selector or {}).items()):
        return False
    na = spec.affinity.node_affinity if spec.affinity is not None else None
    required = na.required_during_scheduling_ignored_during_execution if na is not None else None
    if required is None:
        return True
    return any(all(requirement_ok(labels, e) for e in t.match_expressions or [])
               for t in required.node_selector_terms or [])  # fmt: skip


@dataclass(eq=False)
class Domain:
    values: Key
    parent: Domain | None = None
    children: list[Domain] = field(default_factory=list)
    state: int = 0
    free: Requests = field(default_factory=dict)  # leaves: allocatable minus non-TAS usage
    tas_usage: Requests = field(default_factory=dict)  # leaves
    node: NodeInfo | None = None  # leaves, when the lowest level is the hostname


class Stats:
    """ExclusionStats: why nodes were left out, for the not-fit message."""

    def __init__(self) -> None:
        self.total, self.selector, self.taints, self.resources = 0, 0, {}, {}

    def reasons(self) -> str:
        out = [f"nodeSelector: {self.selector}"] if self.selector else []
        out += [f'taint "{k}": {n}' for k, n in self.taints.items()]
        out += [f'resource "{k}": {n}' for k, n in self.resources.items()]
        return ", ".join(sorted(out))


class TASFlavorSnapshot:
    def __init__(
        self, topology: str, levels: tuple[str, ...], tolerations: tuple[client.V1Toleration, ...],
        nodes: list[NodeInfo], non_tas: Mapping[str, Requests],
    ):  # fmt: skip
        self.topology, self.levels, self.tolerations = topology, levels, tolerations
        self.lowest_is_node = levels[-1] == HOSTNAME
        self.leaves: dict[Key, Domain] = {}
        self.per_level: list[dict[Key, Domain]] = [{} for _ in levels]
        key_of: dict[str, Key] = {}
        for node in nodes:
            values = tuple(node.labels[k] for k in levels)
            key = (node.labels[HOSTNAME],) if self.lowest_is_node else values
            leaf = self.leaves.get(key)
            if leaf is None:
                leaf = self.leaves[key] = Domain(values, node=node if self.lowest_is_node else None)
                self._link(leaf)
            add(leaf.free, node.allocatable)
            key_of[node.name] = key
        for name, u in non_tas.items():
            if name in key_of:
                add(self.leaves[key_of[name]].free, u, -1)

    def _link(self, dom: Domain) -> None:
        self.per_level[len(dom.values) - 1][dom.values] = dom
        if len(dom.values) == 1:
            return
        parent = self.per_level[len(dom.values) - 2].get(dom.values[:-1])
        if parent is None:
            parent = Domain(dom.values[:-1])
            self._link(parent)
        dom.parent = parent
        parent.children.append(dom)

    def key(self, values: Key) -> Key:
        return values[-1:] if self.lowest_is_node else values

    def set_usage(self, usage: Mapping[Key, Requests]) -> None:
        """The admitted TAS workloads' usage per leaf (the cache's), replacing what a cycle added."""
        for leaf in self.leaves.values():
            leaf.tas_usage = {}
        self.add_usage(usage)

    def add_usage(self, usage: Mapping[Key, Requests], sign: int = 1) -> None:
        for key, u in usage.items():
            if key in self.leaves:
                add(self.leaves[key].tas_usage, u, sign)

    def fits(self, assignment: TopologyAssignment, per_pod: Requests) -> bool:
        """TASFlavorSnapshot.Fits: every domain still holds its pods."""
        for values, n in assignment.domains:
            leaf = self.leaves.get(values)
            if leaf is None:
                return False
            left = dict(leaf.free)
            add(left, leaf.tas_usage, -1)
            if count_in(per_pod, left)[0] < n:
                return False
        return True

    def has_level(self, request: TopologyRequest) -> bool:
        return request.level is None or request.level in self.levels

    # ---- the assignment ----------------------------------------------------------------------------

    def find(self, request: TopologyRequest | None, per_pod: Requests, count: int, pod: client.V1Pod,
             simulate_empty: bool = False) -> tuple[TopologyAssignment | None, str]:  # fmt: skip
        """findTopologyAssignment: the assignment, or None and why it does not fit (request None:
        implied by a TAS-only ClusterQueue, unconstrained on the lowest level)."""
        unconstrained = request is None or request.level is None
        required = request is not None and request.required
        level = self.levels[-1] if unconstrained else request.level
        if level not in self.levels:
            return None, f"no requested topology level: {level}"
        stats = self._fill(per_pod, pod, simulate_empty)
        found = self._fit_level(self.levels.index(level), required, count, unconstrained, stats)
        if isinstance(found, str):
            return None, found
        idx, domains = found
        domains = self._minimum(domains, count, unconstrained)
        while idx < len(self.levels) - 1:
            lower = [c for d in domains for c in d.children]
            domains = self._minimum(self._sorted(lower, unconstrained), count, unconstrained)
            idx += 1
        domains.sort(key=lambda d: d.values)
        first = len(self.levels) - 1 if self.lowest_is_node else 0
        placed = tuple((d.values[first:], d.state) for d in domains if d.state)
        return TopologyAssignment(self.levels[first:], placed), ""

    def _fill(self, per_pod: Requests, pod: client.V1Pod, simulate_empty: bool) -> Stats:
        """Phase 1: pods that fit per leaf, summed up the tree."""
        requests = {**per_pod, PODS: per_pod.get(PODS, 0) + 1}
        tolerations = [*(pod.spec.tolerations or []), *self.tolerations]
        stats = Stats()
        for level in self.per_level:
            for d in level.values():
                d.state = 0
        for leaf in self.leaves.values():
            stats.total += 1
            if leaf.node is not None:
                taint = first_untolerated(leaf.node.taints, tolerations, DO_NOT_SCHEDULE_EFFECTS)
                if taint is not None:
                    what = f"{taint.key}{'=' + taint.value if taint.value else ''}:{taint.effect}"
                    stats.taints[what] = stats.taints.get(what, 0) + 1
                    continue
                if not node_matches(leaf.node.labels, pod):
                    stats.selector += 1
                    continue
            left = dict(leaf.free)
            if not simulate_empty:
                add(left, leaf.tas_usage, -1)
            leaf.state, limiting = count_in(requests, left)
            if leaf.state == 0 and limiting:
                stats.resources[limiting] = stats.resources.get(limiting, 0) + 1
        for level in reversed(self.per_level[:-1]):
            for d in level.values():
                d.state = sum(c.state for c in d.children)
        return stats

    def _sorted(self, domains: list[Domain], unconstrained: bool) -> list[Domain]:
        """BestFit: most pods first; LeastFreeCapacity (unconstrained): fewest first; then values."""
        sign = 1 if unconstrained else -1
        return sorted(domains, key=lambda d: (sign * d.state, d.values))

    def _fit_level(self, idx: int, required: bool, count: int, unconstrained: bool,
                   stats: Stats) -> tuple[int, list[Domain]] | str:  # fmt: skip
        """findLevelWithFitDomains."""
        domains = list(self.per_level[idx].values())
        if not domains:
            return f"no topology domains at level: {self.levels[idx]}"
        ordered = self._sorted(domains, unconstrained)
        top = ordered[0]
        if not unconstrained and top.state >= count:
            top = best_fit(ordered, count)
        if unconstrained:
            for d in ordered:
                if d.state >= count:
                    return idx, [d]
        if top.state >= count:
            return idx, [top]
        if required:
            return self._not_fit(top.state, count, stats)
        if idx > 0 and not unconstrained:
            return self._fit_level(idx - 1, required, count, unconstrained, stats)
        out, remaining = [], count
        for i, d in enumerate(ordered):
            if remaining <= 0:
                break
            if not unconstrained and d.state >= remaining:
                d = best_fit(ordered[i:], remaining)
            out.append(d)
            remaining -= d.state
        if remaining > 0:
            return self._not_fit(count - remaining, count, stats)
        return idx, out

    def _minimum(self, domains: list[Domain], count: int, unconstrained: bool) -> list[Domain]:
        """updateCountsToMinimum: fill the domains in order, the last one the best fit for the rest."""
        out, remaining = [], count
        for i, d in enumerate(domains):
            if not unconstrained and d.state >= remaining:
                d = best_fit(domains[i:], remaining)
            if d.state >= remaining:
                d.state = remaining
                out.append(d)
                return out
            remaining -= d.state
            out.append(d)
        raise AssertionError(f"TAS: {remaining} of {count} pods left after the fit level held them all")

    def _not_fit(self, fit: int, count: int, stats: Stats) -> str:
        if fit <= 0:
            msg = f'topology "{self.topology}" doesn\'t allow to fit any of {count} pod(s)'
        else:
            msg = f'topology "{self.topology}" allows to fit only {fit} out of {count} pod(s)'
        if reasons := stats.reasons():
            msg += f". Total nodes: {stats.total}; excluded: {reasons}"
        return msg


def best_fit(domains: list[Domain], needed: int) -> Domain:
    """findBestFitDomain: the first domain with the fewest pods that still holds `needed`, else the
    first (the one with the most room)."""
    best = domains[0]
    for d in domains:
        if needed <= d.state < best.state:
            best = d
    return best
