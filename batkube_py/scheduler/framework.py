"""The scheduling framework: PreFilter → Filter → PreScore → Score → NormalizeScore → × weight → select.

Plugins work on whole node columns (numpy) instead of one node at a time; the results are the same
as kube-scheduler's per-node loop, and a cycle over 1000 nodes costs tens of microseconds. A plugin
implements the extension points it needs by overriding Plugin's methods, as upstream plugins implement
the interfaces they need; `CycleState` carries what a PreFilter/PreScore computed to the later points.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from batkube_py.scheduler import filterorder, nominated, ties
from batkube_py.scheduler.podinfo import PodInfo
from batkube_py.scheduler.snapshot import NodeTable
from batkube_py.scheduler.versions import DEFAULT_KUBE_VERSION


def first_max_numpy(total: np.ndarray) -> tuple[int, int]:
    """(index of the first highest score, how many nodes share it); the compiled loop's reference."""
    first = int(total.argmax())
    return first, int(np.count_nonzero(total == total[first]))


try:
    from batkube_py.scheduler._kernels import first_max
except ImportError:  # installed without a C compiler
    first_max = first_max_numpy


@dataclass(frozen=True)
class PreemptionArgs:
    """DefaultPreemption's args (upstream defaults)."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100


MAX_NODE_SCORE = 100

# Cluster events a plugin registers for (upstream EventsToRegister, QueueingHints on as in 1.32),
# named Resource/Action. Only assigned pods raise pod events here.
POD_DELETE = "Pod/Delete"
POD_ADD = "Pod/Add"  # an assigned pod appeared (affinity, topology spread)
NODE_ADD = "Node/Add"
NODE_TAINT = "Node/UpdateNodeTaint"  # taints or spec.unschedulable changed (upstream classes both so)
NODE_LABEL = "Node/UpdateNodeLabel"
NODE_ALLOCATABLE = "Node/UpdateNodeAllocatable"


@dataclass(frozen=True)
class NodeChange:
    """A node event's old and new state, what a node QueueingHint compares (old None: node added)."""

    index: int
    old_schedulable: bool | None
    new_schedulable: bool
    old_taints: tuple = ()
    new_taints: tuple = ()
    old_labels: dict[str, str] | None = None
    new_labels: dict[str, str] = field(default_factory=dict)


# What a PreFilter or PreScore returns when the plugin has nothing to do for this pod (upstream's Skip
# status): its Filter is not run, or every node gets the normalised score of 0 without calling Score.
SKIP = "Skip"


class CycleState(dict):
    """Per-cycle scratch space shared by one pod's extension points, keyed by plugin name.

    `filters` holds the Filter plugins this cycle runs: the profile's, less those whose PreFilter said
    SKIP (upstream's SkipFilterPlugins). `nominated` maps a node to the pods nominated to it that the
    filters must see there: those of equal or higher priority than this pod, other than itself.
    """

    filters: list[Plugin]
    nominated: dict[int, list[PodInfo]]


@dataclass
class FilterResult:
    feasible: np.ndarray | None  # bool, aligned with the node indices given; None: every node passes
    reasons: dict[str, int] = field(default_factory=dict)  # reason → number of nodes it rejected
    # reason → which of the given nodes it rejected; lets the cycle recount reasons over the nodes
    # upstream would have examined without filtering again (optional: None → filter again)
    masks: dict[str, np.ndarray] | None = None

    def keep(self, idx: np.ndarray) -> np.ndarray:
        return idx if self.feasible is None else idx[self.feasible]


PASS = FilterResult(None)  # what a filter with nothing to check for this pod returns


class Plugin:
    """Base of every plugin; the defaults mean "this extension point is not implemented"."""

    name = ""
    filters = False
    scores = False
    # What its PreFilter and Filter verdicts on a node read besides the pod: "node" (that node's labels,
    # taints and spec), "requests" (also the request sums NodeTable keeps for it, not its pods), "cluster"
    # (any pod anywhere). Nominated pods and preemption's dry runs skip work this rules out.
    reads = "cluster"
    # the kube-scheduler release whose formulas it follows (config.build_profiles sets it per run)
    kube_version = DEFAULT_KUBE_VERSION

    # Events whose QueueingHint depends on the event and the pod; for the other registered events the
    # hint is Queue (upstream: no QueueingHintFn, or one that always queues for the events raised here).
    hinted_events: frozenset[str] = frozenset()

    def events_to_register(self) -> frozenset[str]:
        return frozenset()

    def queueing_hint(self, pod: PodInfo, event: str, obj: PodInfo | NodeChange) -> bool:
        """isSchedulableAfter*: can `event` (on `obj`) make `pod`, which this plugin rejected, schedulable?"""
        return True

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> str | None:
        """None to go on; SKIP when its Filter has nothing to check for this pod; a reason to declare the
        pod unschedulable on every node at once."""
        return None

    def filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> FilterResult:
        return FilterResult(np.ones(idx.size, dtype=bool))

    def feasible_mask(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> np.ndarray | None:
        """Filter over every node when nobody will read the reasons: None when every node passes.

        A plugin overrides it when the verdict alone is much cheaper than the verdict and its reasons.
        """
        return self.filter(state, pod, nodes, nodes.all).feasible

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> str | None:
        """None to go on; SKIP when every node would score 0 for this pod."""
        return None

    def score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray) -> np.ndarray:
        return np.zeros(idx.size, dtype=np.int64)

    def normalize(self, state: CycleState, scores: np.ndarray) -> np.ndarray:
        return scores


@dataclass
class Decision:
    """One scheduling cycle's outcome, kept whole so that "why this node" can be recorded."""

    pod: PodInfo
    node: int | None
    feasible: int
    reasons: dict[str, int]
    rejected_by: frozenset[str] = frozenset()  # plugins that rejected some node (UnschedulablePlugins)
    evaluated: int = 0
    top_scores: list[tuple[int, int]] = field(default_factory=list)  # (node index, total score)
    # plugin → {"raw": [...], "normalized": [...], "weight": w} over the top nodes
    plugin_scores: dict[str, list[dict[str, int]]] = field(default_factory=dict)
    examined: np.ndarray | None = None  # the nodes checked; None: `evaluated` from the start index


@dataclass
class Profile:
    """A scheduler profile: one schedulerName, its plugins and weights, its own tie-breaking RNG (1.32;
    1.37 breaks ties without one, ties.py) and, for preemption's random offset, the same RNG.

    With `parallelism` above 1 the order in which filtering finds the feasible nodes, and with it the
    1.37 tie-break and the nodes a sampling cycle keeps, comes from `order_rng` (filterorder.py); 1 is
    upstream's serial rotation, exact and without a draw."""

    scheduler_name: str
    filters: list[Plugin]
    scorers: list[tuple[Plugin, int]]
    rng: np.random.Generator
    percentage_of_nodes_to_score: int = 0
    pre_filters: list[Plugin] = field(default_factory=list)
    next_start: int = 0
    preemption: PreemptionArgs | None = field(default_factory=PreemptionArgs)  # DefaultPreemption
    kube_version: str = DEFAULT_KUBE_VERSION
    parallelism: int = 1
    order_rng: np.random.Generator | None = None

    def __post_init__(self) -> None:
        if not self.pre_filters:
            seen: list[Plugin] = []
            for p in [*self.filters, *(s for s, _ in self.scorers)]:
                if p not in seen:
                    seen.append(p)
            self.pre_filters = seen
        # only plugins with a PreFilter of their own: the base one has nothing to say
        self._pre_filtering = [p for p in self.pre_filters if type(p).pre_filter is not Plugin.pre_filter]
        if self.order_rng is None:
            self.order_rng = self.rng

    @property
    def filter_names(self) -> frozenset[str]:
        """Every plugin that can reject a pod: a failure none of them explains waits for any event."""
        return frozenset(p.name for p in [*self.pre_filters, *self.filters])

    def _feasible_quick(self, state: CycleState, pod: PodInfo, nodes: NodeTable):
        """_feasible when the reasons will not be read (no decision record, some node fits).

        Upstream's Filter sees one node at a time, so a node's verdict does not depend on which other
        nodes are filtered with it: filtering every node in index order and cutting the rotation from
        the start index afterwards picks the nodes _feasible picks. None when no node fits, for
        _feasible to count the reasons.
        """
        ok = None
        for plugin in state.filters:
            mask = plugin.feasible_mask(state, pod, nodes)
            if mask is not None:
                ok = mask if ok is None else ok & mask
        if state.nominated:
            ok = np.ones(len(nodes), dtype=bool) if ok is None else ok.copy()  # masks may be live columns
            on = np.fromiter(state.nominated, dtype=np.int64)
            on = on[ok[on]]
            ok[on[nominated.fail_with_nominated(self, state, pod, nodes, on)]] = False
        fits = nodes.all if ok is None else ok.nonzero()[0]
        if fits.size == 0:
            return None
        n, want = len(nodes), self._want(len(nodes))
        # the feasible nodes in rotation order from the start index, only as far as the cut needs them
        k = int(fits.searchsorted(self.next_start)) if self.next_start else 0
        need = fits.size if self.parallelism > 1 else min(want + 1, fits.size)
        head = fits[k : k + need]
        if head.size < need:
            head = np.concatenate((head, fits[: need - head.size]))
        idx, processed, examined = self._cut(head, fits.size, n, want)
        self.next_start = (self.next_start + processed) % n
        return idx, {}, frozenset(), processed, examined

    def samples(self, n: int) -> bool:
        """Whether upstream may stop filtering before the last node of n (numFeasibleNodesToFind)."""
        return self._want(n) < n

    def _want(self, n: int) -> int:
        if not self.scorers:
            return 1
        return filterorder.num_feasible_nodes_to_find(n, self.percentage_of_nodes_to_score)

    def _cut(self, head: np.ndarray, found: int, n: int, want: int):
        """The nodes upstream's filtering keeps of the `found` feasible ones (`head`: in rotation order
        from the start index, at least want+1 of them, all with parallel workers), in the feasible list's
        order; how many nodes it went through (all n if it found no more than `want`); and which nodes it
        checked (node indices) when that is not the first `processed` from the start index (else None)."""
        if found <= want:
            return head, n, None
        s = self.next_start
        order, processed, checked = filterorder.cut((head - s) % n, n, want, self.parallelism, self.order_rng)
        return head[order], processed, None if checked is None else (checked + s) % n

    def _feasible(self, state: CycleState, pod: PodInfo, nodes: NodeTable):
        n, want = len(nodes), self._want(len(nodes))
        # Upstream filters from nextStartNodeIndex, in parallel, and stops after `want` feasible nodes;
        # the nodes it processed move the start index on, so every node gets its turn across pods.
        s = self.next_start
        idx = nodes.all if s == 0 else np.concatenate((nodes.all[s:], nodes.all[:s]))
        idx, reasons, rejected, levels = self._filter_nodes(state, pod, nodes, idx)
        found = idx.size
        idx, processed, examined = self._cut(idx, found, n, want)
        if found > want and reasons:  # nodes upstream never examined are not counted
            if examined is None:
                examined = ((nodes.all - s) % n < processed).nonzero()[0]
            seen = np.zeros(n, dtype=bool)
            seen[examined] = True
            if levels is not None and all(r.masks is not None for _, _, r in levels):
                reasons, rejected = filterorder.recount(levels, seen)
            else:
                reasons, rejected = self._recount(state, pod, nodes, examined)
        if n:
            self.next_start = (self.next_start + processed) % n
        return idx, reasons, frozenset(rejected), processed, examined

    def _filter_chain(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
        """Filters in order, each on the nodes the previous ones kept (a node counts under its first
        rejection, as upstream stops at the first failing plugin)."""
        reasons: dict[str, int] = {}
        rejected: set[str] = set()
        levels = []  # (plugin name, nodes given, result) of the filters that rejected something
        for plugin in state.filters:
            if idx.size == 0:
                break
            result = plugin.filter(state, pod, nodes, idx)
            if result.reasons:
                rejected.add(plugin.name)
                levels.append((plugin.name, idx, result))
                for reason, k in result.reasons.items():
                    reasons[reason] = reasons.get(reason, 0) + k
            idx = result.keep(idx)
        return idx, reasons, rejected, levels

    def _filter_nodes(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray):
        if not state.nominated:
            return self._filter_chain(state, pod, nodes, idx)
        return nominated.filter_nodes(self, state, pod, nodes, idx)

    def passes(self, state: CycleState, pod: PodInfo, nodes: NodeTable, i: int) -> bool:
        """Whether node i passes every filter, nominated pods counted (one node's RunFilterPlugins-
        WithNominatedPods): the nominated node's shortcut and preemption's dry run ask this."""
        return nominated.passes(self, state, pod, nodes, i)

    def _recount(self, state: CycleState, pod: PodInfo, nodes: NodeTable, examined: np.ndarray):
        _, reasons, rejected, _ = self._filter_nodes(state, pod, nodes, np.sort(examined))
        return reasons, rejected

    def diagnose(self, pod: PodInfo, nodes: NodeTable) -> tuple[int, dict[str, int]]:
        """Feasible node count and rejection reasons over every node, leaving no trace (no RNG draw)."""
        state = CycleState()
        if (stop := self.pre_filter(state, pod, nodes)) is not None:
            return 0, {stop[1]: len(nodes)}
        idx, reasons, _, _ = self._filter_chain(state, pod, nodes, nodes.all)
        return int(idx.size), reasons

    def pre_filter(self, state: CycleState, pod: PodInfo, nodes: NodeTable) -> tuple[str, str] | None:
        """(plugin, reason) of the first PreFilter that rules the pod out everywhere, else None, with
        `state.filters` set to the filters left to run."""
        skipped = []
        for plugin in self._pre_filtering:
            why = plugin.pre_filter(state, pod, nodes)
            if why == SKIP:
                skipped.append(plugin)
            elif why is not None:
                return plugin.name, why
        state.filters = [p for p in self.filters if p not in skipped] if skipped else self.filters
        state.nominated = nodes.nominated_for(pod) if nodes.nominated else {}
        return None

    def schedule_one(self, pod: PodInfo, nodes: NodeTable, explain: bool = False) -> Decision:
        """One cycle; `explain` also ranks the best nodes, which only the decision record needs."""
        state = CycleState()
        if (stop := self.pre_filter(state, pod, nodes)) is not None:
            return Decision(pod, None, 0, {stop[1]: len(nodes)}, frozenset({stop[0]}))
        # evaluateNominatedNode: a preemptor tries the node it was nominated to first, and takes it
        # without scoring if it passes
        if (i := pod.nominated_node) is not None and self.passes(state, pod, nodes, i):
            return Decision(pod, i, 1, {}, frozenset(), 1)
        quick = None if explain else self._feasible_quick(state, pod, nodes)
        idx, reasons, rejected, processed, examined = quick or self._feasible(state, pod, nodes)
        if idx.size == 0:
            return Decision(pod, None, 0, reasons, rejected, processed)
        if idx.size == 1 or not self.scorers:
            return Decision(pod, int(idx[0]), int(idx.size), reasons, rejected, processed)
        total, per_plugin = self._score(state, pod, nodes, idx, explain)
        first, count = first_max(total)
        draw = None  # parallel workers' order among every node (all checked): drawn if the heap needs it
        if self.parallelism > 1 and examined is None:
            draw = functools.partial(self._found_order, idx, len(nodes))
        pick = ties.pick(total, first, count, self.kube_version, self.rng, draw)
        decision = Decision(pod, int(idx[pick]), int(idx.size), reasons, rejected, processed)
        decision.examined = examined
        if explain:
            top = np.lexsort((idx, -total))[:3]  # best first, then in node order
            decision.top_scores = [(int(idx[t]), int(total[t])) for t in top]
            decision.plugin_scores = {
                name: [{"raw": int(r[t]), "normalized": int(n[t]), "weight": w} for t in top]
                for name, (r, n, w) in per_plugin.items()
            }
        return decision

    def _found_order(self, idx: np.ndarray, n: int) -> np.ndarray:
        return filterorder.completion_order((idx - self.next_start) % n, n, self.parallelism, self.order_rng)

    def _score(self, state: CycleState, pod: PodInfo, nodes: NodeTable, idx: np.ndarray, explain: bool):
        """Total weighted score per node of `idx`, and (explain) each plugin's (raw, normalized, weight)."""
        total = None
        per_plugin = {}
        for plugin, weight in self.scorers:  # each PreScore, then its Score: plugins share no state
            if plugin.pre_score(state, pod, nodes, idx) == SKIP:
                if explain:  # the same for every node, so it can change no choice: only shown
                    const = int(plugin.normalize(state, np.zeros(1, dtype=np.int64))[0]) * weight
                    zeros = np.zeros(idx.size, dtype=np.int64)
                    total = zeros + const if total is None else total + const
                    per_plugin[plugin.name] = (zeros, zeros + const // weight, weight)
                continue
            raw = plugin.score(state, pod, nodes, idx)
            normalized = plugin.normalize(state, raw.copy() if explain else raw)
            weighted = normalized * weight if weight != 1 else normalized
            total = weighted if total is None else total + weighted
            if explain:
                per_plugin[plugin.name] = (raw, normalized, weight)
        if total is None:
            total = np.zeros(idx.size, dtype=np.int64)
        return total, per_plugin

    def rank(self, pod: PodInfo, nodes: NodeTable) -> tuple[np.ndarray, np.ndarray, dict]:
        """(every feasible node, its total score, each plugin's scores) with nominated pods counted,
        leaving no trace (no RNG draw, start index kept): what a binding is checked against (parity)."""
        state = CycleState()
        if self.pre_filter(state, pod, nodes) is not None:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, {}
        idx = self._filter_nodes(state, pod, nodes, nodes.all)[0]
        if idx.size == 0 or not self.scorers:
            return idx, np.zeros(idx.size, dtype=np.int64), {}
        total, per_plugin = self._score(state, pod, nodes, idx, True)
        return idx, total, per_plugin
