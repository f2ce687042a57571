"""What makes a gang a Kueue pod group on the real backend, without a control plane: the owner's labels
and annotations the adapter writes on each member, and the role hash batkube writes in place of Kueue's
pod webhook (docs/kueue.md). The real Kueue's handling of them: tests/test_kueue_real_gangs.py."""

from __future__ import annotations

from batkube_py.adapter import podshape
from batkube_py.adapter.gangjobs import Gang, Gangs, pod_group
from batkube_py.adapter.queuejobs import (
    GROUP_COUNT_ANNOTATION,
    GROUP_NAME_LABEL,
    POD_INDEX_LABEL,
    RETRIABLE_ANNOTATION,
)
from batkube_py.controlplane.kueue import role_hash
from batkube_py.inputs.queues import QUEUE_LABEL


class Recorder:
    def __init__(self):
        self.pods, self.groups = [], []

    def add_pod_group(self, group, now):
        self.groups.append(group.metadata.name)

    def add_pod(self, pod, job_id, now):
        self.pods.append(pod)


def members(labels: dict[str, str] | None, size: int = 3, cpu: str = "1"):
    shape = podshape.pod_shape("w0!g", {"res": size, "cpu": cpu}, {"type": "delay", "delay": 1})
    if labels:
        shape = podshape.with_labels(shape, labels)
    gangs, backend = Gangs(), Recorder()
    gangs.by_job["w0!g"] = Gang(pod_group("w0-g", size, shape, None), [f"w0-g-{i}" for i in range(size)],
                                shape, False)  # fmt: skip
    gangs.add_to(backend, "w0!g", 0.0)
    return backend


def test_a_gang_naming_a_queue_is_one_kueue_pod_group_of_its_size():
    backend = members({QUEUE_LABEL: "q"}, size=3)
    assert backend.groups == ["w0-g"] and len(backend.pods) == 3
    for pod in backend.pods:
        assert pod.metadata.labels[GROUP_NAME_LABEL] == "w0-g"
        assert pod.metadata.annotations[GROUP_COUNT_ANNOTATION] == "3"
        assert pod.metadata.annotations[RETRIABLE_ANNOTATION] == "false"
    assert [p.metadata.name for p in backend.pods] == ["w0-g-0", "w0-g-1", "w0-g-2"]
    # each member's rank, for Kueue's topology ungater (domains handed out in member order)
    assert [p.metadata.labels[POD_INDEX_LABEL] for p in backend.pods] == ["0", "1", "2"]


def test_a_gang_without_a_queue_is_left_to_kube_scheduler_alone():
    backend = members(None)
    assert all(GROUP_NAME_LABEL not in (p.metadata.labels or {}) for p in backend.pods)
    assert all(GROUP_COUNT_ANNOTATION not in (p.metadata.annotations or {}) for p in backend.pods)
    assert all(POD_INDEX_LABEL not in (p.metadata.labels or {}) for p in backend.pods)


def test_the_role_hash_is_one_per_role():
    pods = members({QUEUE_LABEL: "q"}).pods
    hashes = {role_hash(p.spec) for p in pods}
    assert len(hashes) == 1 and len(next(iter(hashes))) == 8  # alike members: one PodSet
    bigger = members({QUEUE_LABEL: "q"}, cpu="2").pods[0]
    assert role_hash(bigger.spec) not in hashes  # another request: another role
    bound = pods[0].spec.model_copy(update={"node_name": "n1"})
    assert role_hash(bound) in hashes  # what Kueue's hash leaves out changes nothing
