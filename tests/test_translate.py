from batkube_py.adapter import podshape, translate
from batkube_py.protocol.models import Resource


def res(i=0, name="node-0", props=None, zone=None):
    return Resource(
        id=i, name=name, state="idle", properties={"role": "", **(props or {})}, zone_properties=zone or {}
    )


def test_host_properties_become_capacity_labels_and_taints():
    node = translate.node_from_resource(
        res(
            3,
            "Node_A",
            {"core": "4", "memory": "16Gi", "gpu": "1", "taints": "gpu=yes:NoSchedule,x:NoExecute"},
            {"zone_kind": "test zone"},
        )
    )
    assert node.metadata.name.startswith("node-a")
    assert node.status.allocatable == {"cpu": "4", "memory": str(16 * 2**30), "pods": "110"}
    assert node.status.capacity == node.status.allocatable
    labels = node.metadata.labels
    assert labels["gpu"] == "1" and labels["zone_kind"] == "test-zone" and labels["role"] == ""
    assert labels[translate.HOSTNAME_LABEL] == node.metadata.name
    assert "core" not in labels and "taints" not in labels
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
        ("gpu", "yes", "NoSchedule"),
        ("x", None, "NoExecute"),
    ]
    assert translate.resource_id(node) == 3
    assert str(translate.alloc_for(node)) == "3"


def test_cpu_property_and_defaults():
    assert translate.node_from_resource(res(props={"cpu": "8", "pods": "4"})).status.allocatable == {
        "cpu": "8",
        "pods": "4",
    }
    assert translate.node_from_resource(res()).status.allocatable == {"cpu": "1", "pods": "110"}


def test_bad_host_property_names_the_host():
    import pytest

    with pytest.raises(translate.TranslationError, match="host 'node-0'.*memory"):
        translate.node_from_resource(res(props={"memory": "lots"}))
    with pytest.raises(translate.TranslationError, match="taint"):
        translate.node_from_resource(res(props={"taints": "a=b:Sometimes"}))


def test_pod_names_are_dns_labels_and_unique():
    taken: set[str] = set()
    names = []
    for job_id in ["w0!1", "w0!a-b", "w0!a!b", "w0!A_B", "w0!" + "x" * 80, "w0!é"]:
        name = translate.pod_name(job_id, taken)
        assert translate._DNS_LABEL.match(name) and len(name) <= 63, name
        taken.add(name)
        names.append(name)
    assert names[0] == "w0-1"
    assert len(set(names)) == len(names)


def pod(job=None, profile=None):
    job = {"id": "w0!1", "subtime": 0, "res": 1, "profile": "p", **(job or {})}
    return podshape.pod_from_job("w0!1", job, {"type": "delay", "delay": 10, **(profile or {})}, "w0-1")


def test_job_fields_override_profile_fields():
    p = pod({"cpu": "500m", "priority": 7, "nodeSelector": {"disk": "ssd"}}, {"cpu": "2", "memory": "1Gi"})
    assert p.spec.containers[0].resources.requests == {"cpu": "500m", "memory": "1Gi"}
    assert p.spec.priority == 7 and p.spec.node_selector == {"disk": "ssd"}
    assert p.spec.scheduler_name == "default-scheduler"
    assert p.metadata.annotations[translate.JOB_ID_ANNOTATION] == "w0!1"


def test_kubernetes_schema_fields():
    p = pod(
        {
            "scheduler": "my-sched",
            "labels": {"app": "web"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}
                        ]
                    }
                }
            },
        },
        {"cpu": 3.516},
    )
    assert p.spec.scheduler_name == "my-sched" and p.metadata.labels == {"app": "web"}
    assert p.spec.tolerations[0].operator == "Exists"
    terms = (
        p.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution.node_selector_terms
    )
    assert terms[0].match_expressions[0].values == ["v"]
    assert p.spec.containers[0].resources.requests == {"cpu": "3.516"}


def test_unrepresentable_jobs_are_rejected_with_field_and_expectation():
    cases = [
        ({"res": 0}, {}, "res", "whole number of hosts"),
        ({}, {"type": "smpi", "trace": "t"}, "profile.type", "cannot run SMPI trace replays"),
        ({}, {"type": "usage_trace"}, "profile.type", "cannot run usage traces"),
        ({}, {"type": "data_staging"}, "profile.type", "cannot run data staging"),
        ({}, {"type": "parallel_homogeneous_pfs"}, "profile.type", "cannot run parallel file system"),
        ({"cpu": "lots"}, {}, "cpu", "quantity"),
        ({}, {"memory": "-1Gi"}, "profile.memory", "non-negative"),
        ({"priority": "high"}, {}, "priority", "integer"),
        ({"nodeSelector": ["a"]}, {}, "nodeSelector", "object"),
        ({"tolerations": {"a": 1}}, {}, "tolerations", "list"),
    ]
    for job, profile, field, expected in cases:
        r = pod(job, profile)
        assert isinstance(r, translate.Rejection), (job, profile)
        assert r.field == field and expected in r.expected
        assert "w0!1" in r.reason and field in r.reason
    assert isinstance(podshape.pod_from_job("w0!1", None, None, "x"), translate.Rejection)
    r = podshape.pod_from_job("w0!1", {"res": 1, "profile": "nope"}, None, "x")
    assert r.field == "profile"


def test_pod_shapes_are_shared_by_content_and_rechecked_when_a_profile_changes():
    job = {"id": "w!1", "res": 1, "profile": "p"}
    a = {"type": "delay", "delay": 5, "cpu": "2", "labels": {"app": "x"}}
    b = {"type": "delay", "delay": 9, "cpu": "2", "labels": {"app": "x"}}  # same pod, other delay
    pa = podshape.pod_from_job("w!1", job, a, "pa")
    pb = podshape.pod_from_job("w!2", job, b, "pb")
    assert pa.spec == pb.spec and pa.metadata.labels == pb.metadata.labels == {"app": "x"}
    assert (pa.metadata.name, pb.metadata.name) == ("pa", "pb")
    pb.metadata.labels["app"] = "changed"  # a pod's labels and requests are its own, not the shape's
    pb.spec.containers[0].resources.requests["nvidia.com/gpu"] = "1"
    pc = podshape.pod_from_job("w!3", job, a, "pc")
    assert pc.metadata.labels == {"app": "x"} and pc.spec.containers[0].resources.requests == {"cpu": "2"}
    a["cpu"] = "3"  # changed in place: a new shape
    assert podshape.pod_from_job("w!4", job, a, "pd").spec.containers[0].resources.requests == {"cpu": "3"}
    a["cpu"] = "-1"  # and checked again
    bad = podshape.pod_from_job("w!5", job, a, "pe")
    assert isinstance(bad, translate.Rejection) and bad.field == "profile.cpu"


def test_parallel_profiles_become_pods_whose_cpu_request_is_not_their_flops():
    ph = {"type": "parallel_homogeneous", "cpu": 5e9, "com": 1e9, "cpu_req": "1", "memory": "1Gi"}
    p = pod({}, ph)
    assert p.spec.containers[0].resources.requests == {"cpu": "1", "memory": "1Gi"}
    p = pod({"cpu": "2"}, {"type": "parallel", "cpu": [1e9], "com": [0]})
    assert p.spec.containers[0].resources.requests == {"cpu": "2"}
    p = pod({}, {"type": "parallel_homogeneous_total", "cpu": 8e9, "com": 0})
    assert not p.spec.containers[0].resources.requests


def test_composed_profiles_are_checked_member_by_member():
    profiles = {
        "ok": {"type": "composed", "repeat": 2, "seq": ["d", "ph", "inner"]},
        "inner": {"type": "composed", "seq": ["d"]},
        "bad": {"type": "composed", "seq": ["d", "mpi"]},
        "d": {"type": "delay", "delay": 1},
        "ph": {"type": "parallel_homogeneous", "cpu": 1e9, "com": 0},
        "mpi": {"type": "smpi", "trace": "t"},
    }
    job = {"id": "w0!1", "res": 1, "profile": "ok"}
    assert not isinstance(podshape.pod_from_job("w0!1", job, podshape.job_profile(job, None, profiles), "x"),
                          translate.Rejection)
    job = {"id": "w0!2", "res": 1, "profile": "bad"}
    r = podshape.pod_from_job("w0!2", job, podshape.job_profile(job, None, profiles), "y")
    assert isinstance(r, translate.Rejection)
    assert r.field == "profile.seq" and "SMPI" in r.expected
