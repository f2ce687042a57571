"""Fidelity of NodeName, TaintToleration and NodeAffinity against kube-scheduler 1.32.

Scenarios and expected numbers come from upstream's unit tests where noted (under
pkg/scheduler/framework/plugins/: tainttoleration/taint_toleration_test.go and
nodeaffinity/node_affinity_test.go);
the others are hand-computed from the upstream formulas, shown in the comments.
"""

from __future__ import annotations

import pytest
from test_plugins_common import pod, run_filter, run_score, table

from batkube_py.kubeapi import model
from batkube_py.scheduler.plugins import NodeAffinity, NodeName, TaintToleration


def test_node_name_filter():
    nodes = table({}, {})
    p = pod("a")
    p.pod.spec.node_name = "n1"
    assert run_filter(NodeName(), p, nodes) == (
        [False, True],
        {"node(s) didn't match the requested node name": 1},
    )
    assert run_filter(NodeName(), pod("b"), nodes) == ([True, True], {})


def test_taint_filter_upstream_cases():
    """taint_toleration_test.go TestTaintTolerationFilter."""
    nodes = table(
        {"taints": "dedicated=user1:NoSchedule"},
        {"taints": "foo=bar:NoSchedule"},
        {"taints": "foo=bar:PreferNoSchedule"},
    )
    # no tolerations: untolerated taint reported with key and value
    ok, reasons = run_filter(TaintToleration(), pod("a"), nodes)
    assert ok == [False, False, True]
    assert reasons == {
        "node(s) had untolerated taint {dedicated: user1}": 1,
        "node(s) had untolerated taint {foo: bar}": 1,
    }
    # toleration Equal with matching value and effect
    tol = [{"key": "dedicated", "operator": "Equal", "value": "user1", "effect": "NoSchedule"}]
    assert run_filter(TaintToleration(), pod("b", tolerations=tol), nodes)[0] == [True, False, True]
    # key matches with Exists
    assert run_filter(TaintToleration(), pod("c", tolerations=[{"key": "foo", "operator": "Exists"}]), nodes)[
        0
    ] == [False, True, True]
    # key and value match but the (non-empty) effect does not: still rejected
    tol = [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]
    assert run_filter(TaintToleration(), pod("d", tolerations=tol), nodes)[0] == [False, False, True]
    # empty effect tolerates every effect
    tol = [{"key": "foo", "operator": "Equal", "value": "bar"}]
    assert run_filter(TaintToleration(), pod("e", tolerations=tol), nodes)[0] == [False, True, True]
    # empty key with Exists tolerates everything
    assert run_filter(TaintToleration(), pod("f", tolerations=[{"operator": "Exists"}]), nodes)[0] == [
        True,
        True,
        True,
    ]


def test_taint_score_upstream_cases():
    """taint_toleration_test.go TestTaintTolerationScore: reversed DefaultNormalizeScore."""
    tol = [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}]
    nodes = table({"taints": "foo=bar:PreferNoSchedule"}, {"taints": "foo=blah:PreferNoSchedule"})
    assert run_score(TaintToleration(), pod("a", tolerations=tol), nodes) == [100, 0]
    # the more intolerable taints a node has, the lower its score
    nodes = table(
        {},
        {"taints": "cpu-type=arm64:PreferNoSchedule"},
        {"taints": "cpu-type=arm64:PreferNoSchedule,disk-type=ssd:PreferNoSchedule"},
    )
    assert run_score(TaintToleration(), pod("b", tolerations=tol), nodes) == [100, 50, 0]
    # only PreferNoSchedule taints and tolerations count
    tol = [{"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}]
    nodes = table({}, {"taints": "cpu-type=arm64:NoSchedule"}, {"taints": "cpu-type=arm64:PreferNoSchedule"})
    assert run_score(TaintToleration(), pod("c", tolerations=tol), nodes) == [100, 100, 0]
    # no taints anywhere: everyone 100
    assert run_score(TaintToleration(), pod("d"), table({}, {})) == [100, 100]


def _na(**kw):
    return {"nodeAffinity": kw}


def _expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


def test_node_selector_and_required_terms_all_operators():
    nodes = table(
        {"foo": "bar", "gpu": "2", "zone": "a"},
        {"foo": "baz", "gpu": "8"},
        {"zone": "b"},
        names=["alpha", "beta", "gamma"],
    )
    reason = "node(s) didn't match Pod's node affinity/selector"
    assert run_filter(NodeAffinity(), pod("s", nodeSelector={"foo": "bar"}), nodes) == (
        [True, False, False],
        {reason: 2},
    )

    def req(*exprs, fields=()):
        term = {"matchExpressions": list(exprs)}
        if fields:
            term["matchFields"] = list(fields)
        return _na(requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": [term]})

    cases = [
        (req(_expr("foo", "In", "bar", "baz")), [True, True, False]),
        (req(_expr("foo", "NotIn", "bar")), [False, True, True]),  # NotIn matches a missing label
        (req(_expr("zone", "Exists")), [True, False, True]),
        (req(_expr("zone", "DoesNotExist")), [False, True, False]),
        (req(_expr("gpu", "Gt", "4")), [False, True, False]),
        (req(_expr("gpu", "Lt", "4")), [True, False, False]),
        (req(_expr("gpu", "Gt", "four")), [False, False, False]),  # invalid term matches nothing
        (req(_expr("foo", "Exists"), _expr("zone", "Exists")), [True, False, False]),  # ANDed
        (req(fields=[{"key": "metadata.name", "operator": "In", "values": ["gamma"]}]), [False, False, True]),
        (
            req(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["gamma"]}]),
            [True, True, False],
        ),
    ]
    for affinity, want in cases:
        assert run_filter(NodeAffinity(), pod("p", affinity=affinity), nodes)[0] == want, affinity
    # terms are ORed; nodeSelector is ANDed with them
    terms = [
        {"matchExpressions": [_expr("zone", "In", "b")]},
        {"matchExpressions": [_expr("foo", "In", "baz")]},
    ]
    aff = _na(requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": terms})
    assert run_filter(NodeAffinity(), pod("o", affinity=aff), nodes)[0] == [False, True, True]
    assert run_filter(NodeAffinity(), pod("o2", affinity=aff, nodeSelector={"zone": "b"}), nodes)[0] == [
        False,
        False,
        True,
    ]


def test_conflicting_node_name_terms_fail_at_prefilter():
    f = lambda n: {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}  # noqa: E731
    term = {"matchFields": [*f("a")["matchFields"], *f("b")["matchFields"]]}
    aff = _na(requiredDuringSchedulingIgnoredDuringExecution={"nodeSelectorTerms": [term]})
    from batkube_py.scheduler.framework import CycleState

    assert (
        NodeAffinity().pre_filter(CycleState(), pod("c", affinity=aff), table({}))
        == "pod affinity terms conflict"
    )


def test_preferred_node_affinity_score_upstream_cases():
    """node_affinity_test.go TestNodeAffinityPriority: 2, 2+4+5 = 11 and 4 → 100·w/11 = 18, 100, 36."""
    t1 = {"weight": 2, "preference": {"matchExpressions": [_expr("foo", "In", "bar")]}}
    t2 = {"weight": 4, "preference": {"matchExpressions": [_expr("key", "In", "value")]}}
    t3 = {
        "weight": 5,
        "preference": {
            "matchExpressions": [
                _expr("foo", "In", "bar"),
                _expr("key", "In", "value"),
                _expr("az", "In", "az1"),
            ]
        },
    }
    nodes = table({"foo": "bar"}, {"foo": "bar", "key": "value", "az": "az1"}, {"key": "value"})
    p = pod("a", affinity=_na(preferredDuringSchedulingIgnoredDuringExecution=[t1, t2, t3]))
    assert run_score(NodeAffinity(), p, nodes) == [18, 100, 36]
    p = pod("b", affinity=_na(preferredDuringSchedulingIgnoredDuringExecution=[t1]))
    assert run_score(NodeAffinity(), p, table({"foo": "bar"}, {"key": "value"}, {"az": "az1"})) == [100, 0, 0]
    assert run_score(NodeAffinity(), pod("c"), nodes) == [0, 0, 0]


def test_added_affinity_is_enforced_and_scored():
    """NodeAffinityArgs.addedAffinity: its own failure reason; its preferred terms add to the pod's."""
    added = model(
        {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [_expr("pool", "Exists")]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 3, "preference": {"matchExpressions": [_expr("pool", "In", "fast")]}}
            ],
        },
        "V1NodeAffinity",
    )
    plugin = NodeAffinity(added)
    nodes = table({"pool": "fast"}, {"pool": "slow", "foo": "bar"}, {"foo": "bar"})
    ok, reasons = run_filter(plugin, pod("a", nodeSelector={"foo": "bar"}), nodes)
    assert ok == [False, True, False]
    assert reasons == {
        "node(s) didn't match scheduler-enforced node affinity": 1,
        "node(s) didn't match Pod's node affinity/selector": 1,
    }
    # pod preferred foo=bar weight 2 + added pool=fast weight 3: 3, 2, 2 → 100, 66, 66
    t = {"weight": 2, "preference": {"matchExpressions": [_expr("foo", "In", "bar")]}}
    assert run_score(
        plugin, pod("b", affinity=_na(preferredDuringSchedulingIgnoredDuringExecution=[t])), nodes
    ) == [100, 66, 66]
    assert run_score(plugin, pod("c"), nodes) == [100, 0, 0]  # added terms score even without the pod's


def test_label_changes_invalidate_cached_masks():
    nodes = table({"foo": "bar"}, {})
    p = pod("a", nodeSelector={"foo": "bar"})
    assert run_filter(NodeAffinity(), p, nodes)[0] == [True, False]
    nodes.set_labels(1, {**nodes.labels[1], "foo": "bar"})
    assert run_filter(NodeAffinity(), p, nodes)[0] == [True, True]


def test_gt_lt_parse_labels_and_operands_as_go_parse_int():
    """strconv.ParseInt(s, 10, 64): optional sign, ASCII digits, int64 range; else the label never
    matches, and an operand it cannot parse makes the term match no node (a term error upstream)."""
    values = ["10", "1_0", "010", "+10", "-10", "\u0661\u0660", "9223372036854775808", "9223372036854775807"]
    nodes = table(*({} for _ in values))
    for i, v in enumerate(values):  # set as is: Batsim properties would be made valid label values
        nodes.set_labels(i, {"gpu": v})

    def gt(bound):
        aff = _na(
            requiredDuringSchedulingIgnoredDuringExecution={
                "nodeSelectorTerms": [{"matchExpressions": [_expr("gpu", "Gt", bound)]}]
            }
        )
        return run_filter(NodeAffinity(), pod("p", affinity=aff), nodes)[0]

    assert gt("5") == [True, False, True, True, False, False, False, True]
    assert gt("-11") == [True, False, True, True, True, False, False, True]
    for bad in ("1_0", " 5", "\u0665", "9223372036854775808", ""):
        assert gt(bad) == [False] * len(values), bad


@pytest.mark.parametrize("bad", ["1_0", " 5", "\u0665", "9223372036854775808", "+"])
def test_added_affinity_gt_operand_must_parse_as_int64(bad):
    from batkube_py.scheduler.pluginargs import NodeAffinityArgs

    term = {"matchExpressions": [_expr("gpu", "Gt", bad)]}
    with pytest.raises(ValueError, match="must be a single integer for 'Gt'"):
        required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        NodeAffinityArgs.model_validate({"addedAffinity": required})
