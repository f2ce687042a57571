"""PodTopologySpread: hard (DoNotSchedule) constraints filter, soft (ScheduleAnyway) ones score (weight 2).

Semantics of kube-scheduler 1.32 (podtopologyspread/filtering.go, scoring.go, common.go): counts come
from every node that has all the constraints' topology keys and passes the constraint's inclusion
policies (nodeAffinityPolicy Honor, nodeTaintsPolicy Ignore by default), domains are label values,
`minDomains` turns the global minimum to 0 while fewer domains exist, and a pod counts only pods of its
namespace matched by the selector (an empty selector {} counts none, upstream's countPodsMatchSelector).

Default constraints (the System ones, hostname maxSkew 3 and zone maxSkew 5, or a List) select pods by
the services / replica sets / stateful sets owning the pod. Simulated pods have no owners, so upstream
would build an empty selector and drop the defaults: that is what happens here by default. The
`x-batkube-defaultSelector: PodLabels` argument selects by the pod's own labels instead, as if a
ReplicaSet with those labels owned every pod.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from kubernetes import client

from batkube_py.scheduler.framework import (
    NODE_ADD,
    NODE_LABEL,
    NODE_TAINT,
    PASS,
    POD_ADD,
    POD_DELETE,
    SKIP,
    CycleState,
    FilterResult,
    NodeChange,
    Plugin,
)
from batkube_py.scheduler.pluginargs import PodTopologySpreadArgs
from batkube_py.scheduler.plugins.helpers import (
    LabelSelector,
    label_selector,
    required_node_affinity,
    untolerated_mask,
)
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable

REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULTS = [
    {"topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 3},
    {"topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 5},
]
_MAX_INT32 = 2**31 - 1
_FILTER, _SCORE = "PodTopologySpread/filter", "PodTopologySpread/score"


@dataclass(frozen=True)
class Constraint:
    max_skew: int
    key: str
    selector: LabelSelector
    min_domains: int = 1
    honor_affinity: bool = True
    honor_taints: bool = False


def _get(c: client.V1TopologySpreadConstraint | dict, snake: str, camel: str):
    return c.get(camel) if isinstance(c, dict) else getattr(c, snake)


def parse(c: client.V1TopologySpreadConstraint | dict, pod_labels: dict[str, str], sel=None) -> Constraint:
    selector = sel if sel is not None else label_selector(_get(c, "label_selector", "labelSelector"))
    keys = _get(c, "match_label_keys", "matchLabelKeys") or []
    extra = {k: pod_labels[k] for k in keys if k in pod_labels}
    if extra:
        selector = selector.with_labels(extra)
    return Constraint(
        max_skew=int(_get(c, "max_skew", "maxSkew")),
        key=_get(c, "topology_key", "topologyKey"),
        selector=selector,
        min_domains=int(_get(c, "min_domains", "minDomains") or 1),
        honor_affinity=(_get(c, "node_affinity_policy", "nodeAffinityPolicy") or "Honor") == "Honor",
        honor_taints=(_get(c, "node_taints_policy", "nodeTaintsPolicy") or "Ignore") == "Honor",
    )


@dataclass(frozen=True)
class _Selected:
    """countPodsMatchSelector's test of one assigned pod: same namespace, labels matched."""

    namespace: str
    selector: LabelSelector

    def __call__(self, pod: PodInfo) -> bool:
        return pod.namespace == self.namespace and self.selector.matches(pod.labels)


def match_counts(nodes: NodeTable, selector: LabelSelector, namespace: str) -> np.ndarray:
    """Per node, the pods of `namespace` the selector matches (an empty or nil selector: none)."""
    if selector.empty or selector.nothing:
        return np.zeros(len(nodes), dtype=np.int64)
    return nodes.pod_index.count(_Selected(namespace, selector))


class PodTopologySpread(Plugin):
    name = "PodTopologySpread"
    filters = True
    scores = True

    def __init__(
        self,
        default_constraints: list[dict] | None = None,
        system_defaulted: bool = True,
        default_selector: str = "Owners",
    ):
        self.system_defaulted = system_defaulted
        self.default_constraints = SYSTEM_DEFAULTS if system_defaulted else list(default_constraints or [])
        self.default_selector = default_selector
        self._cache_keys = {a: (self.name, id(self), a) for a in ("DoNotSchedule", "ScheduleAnyway")}

    @classmethod
    def from_args(cls, args: PodTopologySpreadArgs | None) -> PodTopologySpread:
        if args is None:
            return cls()
        return cls(
            [c.model_dump(exclude_none=True) for c in args.defaultConstraints],
            args.defaultingType == "System",
            args.defaultSelector,
        )

    hinted_events = frozenset({POD_ADD, POD_DELETE, NODE_TAINT})

    def events_to_register(self) -> frozenset[str]:
        return frozenset({POD_ADD, POD_DELETE, NODE_ADD, NODE_LABEL, NODE_TAINT})

    def queueing_hint(self, pod: PodInfo, event: str, obj: PodInfo | NodeChange) -> bool:
        """Pods: an assigned pod of the same namespace matched by a hard constraint's selector. Nodes:
        one carrying every topology key whose labels or taints changed, or that gained or lost a key."""
        cons = self.constraints(pod, "DoNotSchedule")
        if isinstance(obj, PodInfo):
            if obj is not pod and obj.namespace != pod.namespace:
                return False
            return any(c.selector.matches(obj.labels) for c in cons)
        now = all(c.key in obj.new_labels for c in cons)
        if obj.old_labels is None:
            return now
        if all(c.key in obj.old_labels for c in cons) != now:
            return True
        keys_changed = any(obj.old_labels.get(c.key) != obj.new_labels.get(c.key) for c in cons)
        return now and (keys_changed or tuple(obj.old_taints) != tuple(obj.new_taints))

    def constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        key = self._cache_keys[action]
        hit = pod.cache.get(key)
        if hit is not None:
            return hit
        own = pod.pod.spec.topology_spread_constraints or []
        if own:
            out = [parse(c, pod.labels) for c in own if c.when_unsatisfiable == action]
        elif self.default_selector == "PodLabels" and pod.labels:
            sel = label_selector({"matchLabels": pod.labels})
            out = [
                parse(c, pod.labels, sel)
                for c in self.default_constraints
                if c["whenUnsatisfiable"] == action
            ]
        else:
            out = []  # no owners → empty default selector → upstream drops the default constraints
        pod.cache[key] = out
        return out

    def _eligible(self, pod: PodInfo, nodes: NodeTable, c: Constraint, base: np.ndarray) -> np.ndarray:
        ok = base
        if c.honor_affinity and (req := required_node_affinity(pod, nodes)) is not None:
            ok = ok & req
        if c.honor_taints:
            ok = ok & ~untolerated_mask(pod, nodes)
        return ok

    # ---- filter --------------------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> str | None:
        cons = self.constraints(pod, "DoNotSchedule")
        if not cons:
            state[_FILTER] = None
            return SKIP
        has_all = np.ones(len(nodes), dtype=bool)
        for c in cons:
            has_all &= nodes.label_codes(c.key)[0] >= 0
        per = []
        for c in cons:
            codes, table = nodes.label_codes(c.key)
            ok = self._eligible(pod, nodes, c, has_all)
            counts = match_counts(nodes, c.selector, pod.namespace)
            dom = np.bincount(codes[ok], weights=counts[ok], minlength=len(table)).astype(np.int64)
            present = np.bincount(codes[ok], minlength=len(table)) > 0
            n_domains = int(present.sum())
            low = int(dom[present].min()) if n_domains else _MAX_INT32
            if n_domains < c.min_domains:
                low = 0
            self_match = 1 if c.selector.matches(pod.labels) else 0
            per.append((c, codes, np.where(present, dom, 0), low, self_match))
        state[_FILTER] = per
        return None

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        if _FILTER not in state:
            self.pre_filter(state, pod, nodes)
        per = state[_FILTER]
        if per is None:
            return PASS
        decided = np.zeros(idx.size, dtype=bool)
        missing = np.zeros(idx.size, dtype=bool)
        skewed = np.zeros(idx.size, dtype=bool)
        for c, codes, dom, low, self_match in per:
            node_codes = codes[idx]
            miss = ~decided & (node_codes < 0)
            match = np.where(node_codes >= 0, dom[np.maximum(node_codes, 0)] if dom.size else 0, 0)
            skew = ~decided & ~miss & (match + self_match - low > c.max_skew)
            missing |= miss
            skewed |= skew
            decided |= miss | skew
        reasons, masks = {}, {}
        if (n := int(missing.sum())) > 0:
            reasons[REASON_MISSING_LABEL], masks[REASON_MISSING_LABEL] = n, missing
        if (n := int(skewed.sum())) > 0:
            reasons[REASON], masks[REASON] = n, skewed
        return FilterResult(~decided, reasons, masks)

    # ---- score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        cons = self.constraints(pod, "ScheduleAnyway")
        if not cons or idx.size == 0:
            state[_SCORE] = None
            return SKIP
        require_all = bool(pod.pod.spec.topology_spread_constraints) or not self.system_defaulted
        has_all = np.ones(len(nodes), dtype=bool)
        if require_all:
            for c in cons:
                has_all &= nodes.label_codes(c.key)[0] >= 0
        ignored = ~has_all[idx]
        kept = idx[~ignored]
        scores = np.zeros(idx.size, dtype=np.float64)
        for c in cons:
            codes, table = nodes.label_codes(c.key)
            counts = match_counts(nodes, c.selector, pod.namespace)
            node_codes = codes[idx]
            if c.key == HOSTNAME:
                size = int(kept.size)
                cnt = counts[idx]
            else:
                # Domains of the candidate nodes; a node without the key forms the "" domain upstream.
                size = int(np.unique(codes[kept]).size)
                ok = self._eligible(pod, nodes, c, has_all) & (codes >= 0)
                dom = np.bincount(codes[ok], weights=counts[ok], minlength=len(table)).astype(np.int64)
                cnt = np.where(node_codes >= 0, dom[np.maximum(node_codes, 0)] if dom.size else 0, 0)
            weight = math.log(size + 2)
            scores += np.where(node_codes >= 0, cnt * weight + (c.max_skew - 1), 0.0)
        raw = np.floor(scores + 0.5).astype(np.int64)  # math.Round of a non-negative float
        state[_SCORE] = (np.where(ignored, 0, raw), ignored)
        return None

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        if _SCORE not in state:
            self.pre_score(state, pod, nodes, idx)
        s = state[_SCORE]
        return np.zeros(idx.size, dtype=np.int64) if s is None else s[0]

    def normalize(self, state: CycleState, scores: np.ndarray) -> np.ndarray:
        """Fewer matching pods is better: 100·(max + min − s)/max; ignored nodes get 0."""
        s = state.get(_SCORE)
        if s is None:
            return scores
        ignored = s[1]
        valid = scores[~ignored]
        if valid.size == 0:
            return np.zeros(scores.size, dtype=np.int64)
        hi, lo = int(valid.max(initial=0)), int(valid.min())
        if hi == 0:
            return np.where(ignored, 0, 100).astype(np.int64)
        return np.where(ignored, 0, 100 * (hi + lo - scores) // hi).astype(np.int64)
