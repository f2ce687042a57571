"""Multi-host Batsim jobs as pod groups: a job with res = N becomes N pods and a PodGroup (gang, minCount N).

Each pod asks for what the job's (or its profile's) fields ask, as a single-host job's pod does; pods
of one group may share a node. Job (or profile) fields:
- `onePodPerNode: true` puts every pod on its own node (a required pod anti-affinity on
  kubernetes.io/hostname against the group's pods), so the job runs on N distinct hosts;
- `groupTopology: <node label key>` asks for the whole group in one value of that label
  (spec.schedulingConstraints.topology, TopologyAwareWorkloadScheduling);
- `groupPolicy: gang` (default) or `basic`: a basic PodGroup (schedulingPolicy.basic) lets its pods bind
  one by one as room appears, holding what they got; the job still starts when its last pod is bound.
Once every pod is bound the job starts with one EXECUTE_JOB: its alloc is the distinct hosts and, when
pods share a host, a `mapping` gives each executor (pod i runs executor i) the index of its host in the
alloc. A group no cluster state could hold is rejected on submission; one disrupted pod kills the job.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from procset import ProcSet

from batkube_py.adapter import podcheck, podshape, translate
from batkube_py.adapter.queuejobs import POD_INDEX_LABEL, kueue_group
from batkube_py.protocol.intervals import procset

GROUP_LABEL = "batkube.io/pod-group"
EXECUTOR_ANNOTATION = "batkube.io/executor"
API_VERSION = "scheduling.k8s.io/v1beta1"


@dataclass
class Gang:
    """An admitted multi-host job: its PodGroup, its pods in executor order, where each is bound."""

    group: client.V1beta1PodGroup
    pods: list[str]
    shape: podshape.Shape
    one_per_node: bool
    node_of: dict[str, str] = field(default_factory=dict)
    alloc: ProcSet = field(default_factory=ProcSet)
    alloc_text: str = ""
    mapping: dict[str, str] | None = None

    @property
    def name(self) -> str:
        return self.group.metadata.name


POLICIES = ("gang", "basic")
FIELDS = ("onePodPerNode", "groupTopology", "groupPolicy")  # a group's job (or profile) fields


def group_fields(
    job_id: str, job: dict[str, Any], profile: dict[str, Any]
) -> tuple[bool, str | None, str] | translate.Rejection:
    """(one pod per node, topology key, policy) from the job, else its profile."""
    where, one = ("onePodPerNode", job["onePodPerNode"]) if "onePodPerNode" in job else (
        "profile.onePodPerNode", profile.get("onePodPerNode"))  # fmt: skip
    if one is not None and not isinstance(one, bool):
        return translate.Rejection(job_id, where, repr(one), "true or false")
    where, key = ("groupTopology", job["groupTopology"]) if "groupTopology" in job else (
        "profile.groupTopology", profile.get("groupTopology"))  # fmt: skip
    if key is not None:
        try:
            if not isinstance(key, str) or not key:
                raise podcheck.FieldProblem("a node label key")
            podcheck.labels({key: "x"}, "node label")
        except podcheck.FieldProblem as exc:
            return translate.Rejection(job_id, where, repr(key), f"a node label key ({exc})")
    where, policy = ("groupPolicy", job["groupPolicy"]) if "groupPolicy" in job else (
        "profile.groupPolicy", profile.get("groupPolicy", "gang"))  # fmt: skip
    if policy not in POLICIES:
        return translate.Rejection(job_id, where, repr(policy), "'gang' or 'basic'")
    return bool(one), key, policy


def member_names(base: str, size: int, taken) -> tuple[str, list[str]]:
    """The group's name and its pods' (`<group>-<i>`), none of them taken by another job."""
    name = base
    n = 0
    while name != base and name in taken or any(f"{name}-{i}" in taken for i in range(size)):
        n += 1
        name = f"{base}-g{n}"
    return name, [f"{name}-{i}" for i in range(size)]


def pod_group(
    name: str, size: int, shape: podshape.Shape, topology: str | None, policy: str = "gang"
) -> client.V1beta1PodGroup:
    constraints = None
    if topology is not None:
        constraints = client.V1beta1PodGroupSchedulingConstraints(
            topology=[client.V1beta1TopologyConstraint(key=topology)]
        )
    return client.V1beta1PodGroup(
        api_version=API_VERSION,
        kind="PodGroup",
        metadata=client.V1ObjectMeta(name=name, namespace=translate.NAMESPACE),
        spec=client.V1beta1PodGroupSpec(
            scheduling_policy=client.V1beta1PodGroupSchedulingPolicy(basic={})
            if policy == "basic"
            else client.V1beta1PodGroupSchedulingPolicy(
                gang=client.V1beta1GangSchedulingPolicy(min_count=size)
            ),
            scheduling_constraints=constraints,
            priority=shape.priority,  # the Priority admission plugin's resolution; every member has it
        ),
    )


def member_pod(
    job_id: str, group: str, pod_name: str, index: int, shape: podshape.Shape, one_per_node: bool
) -> client.V1Pod:
    pod = podshape.assemble(job_id, pod_name, shape)
    pod.metadata.labels = {**(pod.metadata.labels or {}), GROUP_LABEL: group}
    pod.metadata.annotations[EXECUTOR_ANNOTATION] = str(index)
    pod.spec.scheduling_group = client.V1PodSchedulingGroup(pod_group_name=group)
    if one_per_node:
        term = client.V1PodAffinityTerm(
            label_selector=client.V1LabelSelector(match_labels={GROUP_LABEL: group}),
            topology_key=translate.HOSTNAME_LABEL,
        )
        affinity = pod.spec.affinity.model_copy() if pod.spec.affinity is not None else client.V1Affinity()
        anti = affinity.pod_anti_affinity
        required = list(anti.required_during_scheduling_ignored_during_execution or []) if anti else []
        preferred = anti.preferred_during_scheduling_ignored_during_execution if anti else None
        affinity.pod_anti_affinity = client.V1PodAntiAffinity(
            required_during_scheduling_ignored_during_execution=[*required, term],
            preferred_during_scheduling_ignored_during_execution=preferred,
        )
        pod.spec.affinity = affinity
    return pod


def sibling(first: client.V1Pod, name: str, index: int) -> client.V1Pod:
    """Member `index` of `first`'s group: the same pod under its own name and executor, its metadata and
    spec its own objects (backends set fields on them) — a third of member_pod's cost, paid 300,000 times
    by a whole trace in gangs."""
    meta = first.metadata
    labels = dict(meta.labels)
    if POD_INDEX_LABEL in labels:  # a Kueue pod group's member (queuejobs.kueue_group)
        labels[POD_INDEX_LABEL] = str(index)
    own = meta.model_copy(
        update={
            "name": name,
            "labels": labels,
            "annotations": {**meta.annotations, EXECUTOR_ANNOTATION: str(index)},
        }
    )
    return first.model_copy(update={"metadata": own, "spec": first.spec.model_copy()})


def allocation(hosts: list[int]) -> tuple[ProcSet, str, dict[str, str] | None]:
    """EXECUTE_JOB's alloc for executors on these host ids (executor i on hosts[i]), and the mapping
    executor → index in the alloc when some host runs several executors."""
    alloc = procset(hosts)
    if len(alloc) == len(hosts):
        return alloc, str(alloc), None
    index = {h: k for k, h in enumerate(alloc)}
    return alloc, str(alloc), {str(i): str(index[h]) for i, h in enumerate(hosts)}


class Gangs:
    """The decision process's multi-host jobs: admission, pods to add, bindings gathered per job."""

    def __init__(self) -> None:
        self.by_job: dict[str, Gang] = {}

    def __contains__(self, job_id: str) -> bool:
        return job_id in self.by_job

    def admit(
        self, record, job: dict, profile: dict, shape: podshape.Shape, backend, taken
    ) -> Gang | translate.Rejection:
        """The job's group and pods, or why it can never run (checked against the empty cluster)."""
        job_id, size = record.job_id, job["res"]
        record.group_size = size
        fields = group_fields(job_id, job, profile)
        if isinstance(fields, translate.Rejection):
            return fields
        one_per_node, topology, policy = fields
        if not getattr(backend, "supports_groups", lambda: False)():
            why = getattr(backend, "no_groups_reason", None) or (
                "1: this backend does not schedule pod groups (res > 1); the apiserver backend does with "
                "kube-scheduler 1.37.2 and --sync queue"
            )
            return translate.Rejection(job_id, "res", repr(size), why)
        name, pods = member_names(record.pod, size, taken)
        record.group = name  # rejected.csv names the group even when it never existed
        group = pod_group(name, size, shape, topology, policy)
        first = member_pod(job_id, name, pods[0], 0, shape, one_per_node)
        if (why := backend.group_never_fits(first, group)) is not None:
            return translate.Rejection(job_id, "res", repr(size), why)
        record.pod = name
        gang = Gang(group, pods, shape, one_per_node)
        self.by_job[job_id] = gang
        return gang

    def add_to(self, backend, job_id: str, now: float) -> None:
        """Create the PodGroup, then its pods, as a controller would."""
        gang = self.by_job[job_id]
        gang.node_of.clear()
        backend.add_pod_group(gang.group, now)
        first = member_pod(job_id, gang.name, gang.pods[0], 0, gang.shape, gang.one_per_node)
        kueue_group(first, gang.name, len(gang.pods))
        pods = [first, *(sibling(first, name, i) for i, name in enumerate(gang.pods[1:], 1))]
        for pod in pods:
            backend.add_pod(pod, job_id, now)

    def delete_from(self, backend, job_id: str, now: float) -> None:
        gang = self.by_job[job_id]
        for name in gang.pods:
            backend.delete_pod(name, now)
        gang.node_of.clear()

    def bound(self, job_id: str, pod: str, node: str, host_of: dict[str, int]) -> bool:
        """Record one member's binding; True once the whole group is bound (alloc and mapping set)."""
        gang = self.by_job[job_id]
        gang.node_of[pod] = node
        if len(gang.node_of) < len(gang.pods):
            return False
        gang.alloc, gang.alloc_text, gang.mapping = allocation([host_of[gang.node_of[p]] for p in gang.pods])
        return True

    def placement(self, job_id: str, host_of: dict[str, int]) -> tuple[str, tuple[tuple[str, str, int], ...]]:
        """A bound group's distinct nodes ('n0 n1') and each pod's (pod, node, resource id)."""
        gang = self.by_job[job_id]
        members = tuple((p, gang.node_of[p], host_of[gang.node_of[p]]) for p in gang.pods)
        return " ".join(sorted(set(gang.node_of.values()))), members

    def forget(self, job_id: str) -> None:
        self.by_job.pop(job_id, None)
