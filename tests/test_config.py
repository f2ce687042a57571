"""KubeSchedulerConfiguration v1: upstream defaults, merging, validation with field paths, custom plugins.

Defaults are those of pkg/scheduler/apis/config/v1 (default_plugins.go, defaults.go) for 1.32; the
merge and MultiPoint expansion cases follow upstream's default_plugins_test.go / framework_test.go.
"""

from __future__ import annotations

import textwrap

import pytest
from kubernetes import client
from test_plugins_common import table

from batkube_py.adapter import podshape
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.scheduler.config import ConfigError, build_profiles, default_config, load_config, parse_config

HEAD = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def cfg(**kw):
    return parse_config({**HEAD, **kw})


def names(profile):
    return [p.name for p in profile.filters], [(p.name, w) for p, w in profile.scorers]


def test_defaults_match_upstream():
    """1.32's defaults (1.37's: test_kube137.py)."""
    c = default_config("1.32")
    assert (c.percentage_of_nodes_to_score, c.pod_initial_backoff, c.pod_max_backoff, c.parallelism) == (
        0,
        1.0,
        10.0,
        16,
    )
    (spec,) = c.profiles
    assert spec.scheduler_name == "default-scheduler"
    assert spec.weights == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
        "PodTopologySpread": 2, "InterPodAffinity": 2,
        "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
    }  # fmt: skip
    assert spec.points["filter"][:6] == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
    ]
    assert c.preemption["default-scheduler"].minCandidateNodesPercentage == 10
    assert c.preemption["default-scheduler"].minCandidateNodesAbsolute == 100
    (profile,) = build_profiles(c, 0)
    filters, scorers = names(profile)
    assert filters == [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "PodTopologySpread",
        "InterPodAffinity",
    ]
    assert scorers == [
        ("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1), ("PodTopologySpread", 2),
        ("InterPodAffinity", 2), ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1),
    ]  # fmt: skip
    fit = profile.scorers[2][0]
    assert fit.strategy == "LeastAllocated" and fit.resources == [("cpu", 1), ("memory", 1)]


def test_disable_all_scores_reweight_and_add(tmp_path):
    path = tmp_path / "sched.yaml"
    path.write_text(
        textwrap.dedent("""
        apiVersion: kubescheduler.config.k8s.io/v1
        kind: KubeSchedulerConfiguration
        percentageOfNodesToScore: 30
        podInitialBackoffSeconds: 2
        podMaxBackoffSeconds: 20
        profiles:
        - schedulerName: default-scheduler
        - schedulerName: no-scoring
          percentageOfNodesToScore: 70
          plugins:
            preScore: {disabled: [{name: '*'}]}
            score: {disabled: [{name: '*'}]}
        - schedulerName: reweighted
          plugins:
            score:
              enabled: [{name: NodeResourcesFit, weight: 5}, {name: ImageLocality}]
            multiPoint:
              disabled: [{name: TaintToleration}]
          pluginConfig:
          - name: NodeResourcesFit
            args:
              scoringStrategy:
                type: MostAllocated
                resources: [{name: cpu, weight: 3}, {name: memory}]
          - name: DefaultPreemption
            args: {minCandidateNodesPercentage: 20, minCandidateNodesAbsolute: 5}
        """)
    )
    c = load_config(path)
    assert (c.percentage_of_nodes_to_score, c.pod_initial_backoff, c.pod_max_backoff) == (30, 2.0, 20.0)
    default, none, rew = build_profiles(c, 7)
    assert default.percentage_of_nodes_to_score == 30 and none.percentage_of_nodes_to_score == 70
    assert names(none)[1] == [] and "TaintToleration" in names(none)[0]
    filters, scorers = names(rew)
    assert "TaintToleration" not in filters
    # explicit Score entries come first (override), then the remaining MultiPoint ones; weight 0 → 1
    assert scorers[:2] == [("NodeResourcesFit", 5), ("ImageLocality", 1)]
    assert ("NodeAffinity", 2) in scorers and len(scorers) == 6
    fit = scorers and rew.scorers[0][0]
    assert fit.strategy == "MostAllocated" and fit.resources == [("cpu", 3), ("memory", 1)]
    assert c.preemption["reweighted"].minCandidateNodesAbsolute == 5
    # each profile draws from its own seeded generator
    assert default.rng.integers(1 << 30) != none.rng.integers(1 << 30)
    assert build_profiles(c, 7)[1].rng.integers(1 << 30) == build_profiles(c, 7)[1].rng.integers(1 << 30)


def pc(name: str, args: dict) -> dict:
    """One profile whose pluginConfig holds `args` for `name`."""
    return {"profiles": [{"pluginConfig": [{"name": name, "args": args}]}]}


def enable(point: str, name: str, weight: int = 0, index: int = 0) -> dict:
    profiles: list[dict] = [{"schedulerName": f"p{i}"} for i in range(index)]
    profiles.append({"plugins": {point: {"enabled": [{"name": name, "weight": weight}]}}})
    return {"profiles": profiles}


SPREAD = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}


@pytest.mark.parametrize(
    "doc, message",
    [
        (enable("score", "ImageLocality", 101, index=1),
         "profiles[1].plugins.score.enabled[0].weight: must be in 1..100"),
        (enable("filter", "NoSuchPlugin"),
         "profiles[0].plugins.filter.enabled[0].name: unknown plugin 'NoSuchPlugin'"),
        (enable("filter", "EBSLimits"), "profiles[0].plugins.filter.enabled[0].name: EBSLimits was invalid"),
        (enable("filter", "ImageLocality"), "plugin 'ImageLocality' does not extend filter"),
        ({"profiles": [{}, {}]}, "profiles[1].schedulerName: Duplicate value"),
        ({"percentageOfNodesToScore": 101}, "percentageOfNodesToScore: not in valid range [0-100]"),
        ({"podInitialBackoffSeconds": 0}, "podInitialBackoffSeconds: must be greater than 0"),
        ({"podInitialBackoffSeconds": 5, "podMaxBackoffSeconds": 2}, "podMaxBackoffSeconds: must be greater"),
        (pc("InterPodAffinity", {"hardPodAffinityWeight": 101}),
         "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: not in valid range [0, 100]"),
        (pc("NodeResourcesFit", {"scoringStrategy": {"type": "RequestedToCapacityRatio"}}),
         "profiles[0].pluginConfig[0].args.scoringStrategy: requestedToCapacityRatio: required"),
        (pc("NodeResourcesFit", {"scoringStrategy": {"type": "Bogus"}}),
         "profiles[0].pluginConfig[0].args.scoringStrategy.type"),
        (pc("PodTopologySpread", {"defaultConstraints": [SPREAD]}), 'defaultingType: must be "List"'),
        (pc("DefaultPreemption", {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}),
         "cannot be zero at the same time"),
        (pc("NodeResourcesBalancedAllocation", {"resources": [{"name": "cpu", "weight": 2}]}),
         "not in valid range [1, 1]"),
        ({"profiles": [{"schedulerNam": "typo"}]}, "profiles[0].schedulerNam: Extra inputs are not"),
        ({"extenders": [{"urlPrefix": "http://x"}]}, "extenders: not supported"),
    ],
)  # fmt: skip
def test_invalid_configs_name_the_field(doc, message):
    with pytest.raises(ConfigError) as err:
        cfg(**doc)
    assert message in str(err.value), str(err.value)


def test_wrong_api_version_is_refused():
    with pytest.raises(ConfigError, match="apiVersion"):
        parse_config({**HEAD, "apiVersion": "kubescheduler.config.k8s.io/v1beta3"})


def test_custom_plugin_by_import_path_and_by_registered_name():
    c = cfg(
        profiles=[
            {
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "test_plugins_common:CountingPlugin", "weight": 4}]}
                }
            }
        ]
    )
    (p,) = build_profiles(c, 0)
    assert ("CountingPlugin", 4) in names(p)[1]
    c = cfg(
        **{"x-batkube-plugins": ["test_plugins_common:CountingPlugin"]},
        profiles=[{"plugins": {"score": {"enabled": [{"name": "CountingPlugin", "weight": 9}]}},
                   "pluginConfig": [{"name": "CountingPlugin", "args": {"label": "x"}}]}],
    )  # fmt: skip
    (p,) = build_profiles(c, 0)
    plugin = next(s for s, w in p.scorers if s.name == "CountingPlugin")
    assert plugin.args == {"label": "x"} and dict(names(p)[1])["CountingPlugin"] == 9
    with pytest.raises(ConfigError, match="cannot import"):
        cfg(**{"x-batkube-plugins": ["no_such_module:X"]})


def _pod(name, scheduler):
    p = podshape.pod_from_job(name, {"res": 1, "cpu": "1", "scheduler": scheduler}, {"type": "delay"}, name)
    assert isinstance(p, client.V1Pod)
    return p


PACKER = pc("NodeResourcesFit", {"scoringStrategy": {"type": "MostAllocated"}})["profiles"][0]


def test_profiles_selected_by_scheduler_name():
    """A bin-packing profile (MostAllocated) beside the default spreading one, as in the upstream docs."""
    c = cfg(
        profiles=[
            {"schedulerName": "default-scheduler"},
            {"schedulerName": "packer", **PACKER,
             "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}}},
        ]
    )  # fmt: skip
    nodes = [n for n in table({"cpu": "4"}, {"cpu": "4"}, {"cpu": "4"}).nodes]
    cluster = EmbeddedCluster(nodes, seed=0, profiles=build_profiles(c, 0))
    assert cluster.serves("packer") and not cluster.serves("other")
    for i in range(3):
        cluster.add_pod(_pod(f"k{i}", "packer"), f"k{i}", 0.0)
    packed = {b.node for b in cluster.schedule(0.0)}
    assert len(packed) == 1  # all three on the same node
    for i in range(2):
        cluster.add_pod(_pod(f"s{i}", "default"), f"s{i}", 1.0)
    spread = {b.node for b in cluster.schedule(1.0)}
    assert len(spread) == 2 and not spread & packed  # LeastAllocated spreads away from the packed node


def test_preemption_args_reach_the_profiles():
    from batkube_py.scheduler.config import build_profiles, parse_config

    doc = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "schedulerName": "a",
                "pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 7}}],
            },
            {"schedulerName": "b", "plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}},
        ],
    }
    a, b = build_profiles(parse_config(doc), 0)
    assert (a.preemption.min_candidate_nodes_percentage, a.preemption.min_candidate_nodes_absolute) == (10, 7)
    assert b.preemption is None
