"""`--queues FILE` (inputs/queues.py): Kueue v1beta2 objects validated with one line per problem naming
the file, the object, the field and what was expected; the documents the apiserver backend applies."""

from __future__ import annotations

import pytest
from kueue_support import cohort, config, cq, flavor, lq, wpc, write

from batkube_py.inputs.queues import APPLY_ORDER, QueuesError, load_queues

EXAMPLE = __import__("pathlib").Path(__file__).resolve().parents[1] / "examples" / "queues.yaml"


def test_the_example_loads_and_its_documents_come_in_apply_order():
    cfg = load_queues(EXAMPLE)
    kinds = [d["kind"] for d in cfg.documents]
    assert kinds == sorted(kinds, key=APPLY_ORDER.index)
    assert {d["apiVersion"] for d in cfg.documents} == {"kueue.x-k8s.io/v1beta2"}
    assert all(d["metadata"]["namespace"] == "default" for d in cfg.documents if d["kind"] == "LocalQueue")
    assert cfg.local_queue("team-a").spec.cluster_queue == "team-a" and cfg.local_queue("nope") is None
    assert cfg.fair_sharing is False and cfg.twin_refusal() is None


def refusal(tmp_path, docs) -> str:
    with pytest.raises(QueuesError) as exc:
        load_queues(write(tmp_path, docs))
    message = str(exc.value)
    assert "\n" not in message and str(tmp_path) in message
    return message


F = flavor("f")


def q(**spec):
    return cq("q", {"f": {"cpu": 4}}, **spec)


def q_with(quota, cohort_name=None):
    return cq("q", {"f": {"cpu": quota}}, cohort_name)


RG = "spec.resourceGroups.0.flavors.0"
CONF = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration"}
CASES = [
    (
        [F, {**q(), "spec": {"resourceGroups": []}}],
        "ClusterQueue/q: field 'spec.namespaceSelector': expected a selector ({} for every namespace)",
    ),
    (
        [F, cq("q", {"g": {"cpu": 4}})],
        f"ClusterQueue/q: field '{RG}.name': expected the name of a ResourceFlavor",
    ),
    (
        [F, q(), lq("l", "missing")],
        "LocalQueue/l: field 'spec.clusterQueue': expected the name of a ClusterQueue",
    ),
    (
        [F, q_with({"nominalQuota": 4, "borrowingLimit": 1})],
        f"field '{RG}.resources.0.borrowingLimit': expected no limit outside a cohort",
    ),
    (
        [F, q_with({"nominalQuota": 2, "lendingLimit": 3}, "co")],
        "lendingLimit': expected at most nominalQuota",
    ),
    ([F, q_with("lots")], "nominalQuota': expected a non-negative Kubernetes quantity"),
    (
        [F, q(admissionChecks=["x"])],
        "field 'spec.admissionChecks': expected no such field (not modelled by batkube's Kueue twin",
    ),
    ([F, q(stopPolicy="Hold")], "field 'spec.stopPolicy': expected 'None'"),
    ([F, q(queueingStrategy="LIFO")], "field 'spec.queueingStrategy'"),
    (
        [{**lq("l", "q"), "metadata": {"name": "l", "namespace": "team"}}, F, q()],
        "LocalQueue/l: field 'metadata.namespace': expected 'default'",
    ),
    ([{**F, "kind": "Workload"}], "document 1: field 'kind': expected one of ResourceFlavor"),
    ([F, F], "ResourceFlavor/f: field 'metadata.name': expected a name not used twice"),
    ([{**F, "apiVersion": "kueue.x-k8s.io/v1beta1"}], "ResourceFlavor/f: field 'apiVersion'"),
    (
        [F, q(preemption={"borrowWithinCohort": {"policy": "LowerPriority"}})],
        "borrowWithinCohort.policy': expected Never while reclaimWithinCohort is Never",
    ),
    (
        [F, q(), {**CONF, "fairSharing": {}}],
        "Configuration: field 'fairSharing.preemptionStrategies': expected a value (Kueue v1beta2 requires",
    ),
    (
        [F, q(), {**CONF, "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"] * 2}}],
        "field 'fairSharing.preemptionStrategies': expected one of LessThanOrEqualToFinalShare;",
    ),
    (
        [F, q(fairSharing={"weight": "heavy"})],
        "ClusterQueue/q: field 'spec.fairSharing.weight': expected a non-negative Kubernetes quantity",
    ),
    (
        [cohort("a", "b"), cohort("b", "a")],
        "Cohort/a: field 'spec.parentName': expected a cohort tree without cycles (a -> b -> a)",
    ),
]


@pytest.mark.parametrize("docs, expected", CASES)
def test_each_problem_is_one_line_naming_file_object_field_and_expectation(tmp_path, docs, expected):
    assert expected in refusal(tmp_path, docs)


def test_yaml_that_is_not_yaml_is_refused_naming_the_file(tmp_path):
    assert "not valid YAML" in refusal(tmp_path, "kind: [unclosed\n")


def test_what_only_the_twin_lacks_is_loaded_and_refused_by_the_twin(tmp_path):
    conf = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "fairSharing": {"preemptionStrategies": ["LessThanInitialShare"]}}  # fmt: skip
    cfg = load_queues(write(tmp_path, [flavor("f"), cq("q", {"f": {"cpu": 4}}), conf]))
    assert cfg.fair_sharing is True and cfg.twin_refusal() is None
    assert cfg.configuration.fair_sharing.preemption_strategies == ("LessThanInitialShare",)
    conf["admissionFairSharing"] = {"usageHalfLifeTime": "10m"}
    cfg = load_queues(write(tmp_path, [flavor("f"), cq("q", {"f": {"cpu": 4}}), conf]))
    expected = "Configuration: field 'admissionFairSharing': admission fair sharing is not run by batkube"
    assert expected in (cfg.twin_refusal() or "") and expected in (cfg.afs_refusal() or "")
    topo = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}]}}  # fmt: skip
    tas = flavor("f", topologyName="t", nodeLabels={"pool": "p"})
    cfg = load_queues(write(tmp_path, [topo, tas, cq("q", {"f": {"cpu": 4}})]))
    assert cfg.twin_refusal() is None  # topology-aware scheduling is modelled (test_kueue_tas.py)
    preempting = cq("q", {"f": {"cpu": 4}}, preemption={"reclaimWithinCohort": "Any"}, cohort="c")
    cfg = load_queues(write(tmp_path, [topo, tas, preempting]))
    assert "ClusterQueue/q: field 'spec.preemption': preemption beside topology-aware flavors (f)" in (
        cfg.twin_refusal() or ""
    )


def test_quantities_become_kueues_integers(tmp_path):
    cfg = config(tmp_path, flavor("f"), cq("q", {"f": {"cpu": "1500m", "memory": "1Gi"}}), wpc("p", 7))
    from batkube_py.kueue.cache.snapshot import Cache

    quotas = Cache(cfg).cqs["q"].quotas
    assert quotas[("f", "cpu")].nominal == 1500 and quotas[("f", "memory")].nominal == 2**30
    assert cfg.priority_classes["p"].value == 7
