"""Whether a submitted job can become a pod of this cluster: the checks a real cluster's admission and a
first look at its nodes would make, each failure a Rejection naming the field and what was expected.

Kept apart from the decision process because it is pure: the job, its profile and the backend's answers
in, a pod (with the record's request columns filled) or a Rejection out.
"""

from __future__ import annotations

from kubernetes import client

from batkube_py import translate
from batkube_py.cluster import fit
from batkube_py.cluster.base import Backend
from batkube_py.outputs import PodRecord
from batkube_py.quantities import byte_count, milli_cpu


def pod_for(record: PodRecord, job: dict | None, profile: dict | None) -> client.V1Pod | translate.Rejection:
    """The job's pod, with the record's scheduler, priority and request columns filled from it."""
    pod = translate.pod_from_job(record.job_id, job, profile, record.pod)
    if isinstance(pod, translate.Rejection):
        return pod
    record.scheduler = pod.spec.scheduler_name
    record.priority = pod.spec.priority or 0
    requests = pod.spec.containers[0].resources.requests or {}
    record.cpu_request = milli_cpu(requests["cpu"]) / 1000 if "cpu" in requests else 0.0
    record.memory_request = byte_count(requests["memory"]) if "memory" in requests else ""
    return pod


def refusal(record: PodRecord, pod: client.V1Pod, backend: Backend) -> translate.Rejection | None:
    """Why no scheduler of this cluster could ever place the pod (none serves it, no node can hold it)."""
    job_id = record.job_id
    if not backend.serves(record.scheduler):
        return translate.Rejection(
            job_id, "scheduler", repr(record.scheduler), "a schedulerName a profile serves"
        )
    too_big = backend.fits_empty_cluster(pod)
    if too_big is None:
        return None
    requests = pod.spec.containers[0].resources.requests or {}
    asked = " ".join(f"{k}={v}" for k, v in sorted(requests.items())) or "-"
    if too_big.startswith("its ") and (wants := fit.node_constraint(pod)) is not None:
        field = "nodeSelector" if wants.startswith("nodeSelector") else "affinity"
        return translate.Rejection(job_id, field, wants, f"node labels some node has, but {too_big}")
    return translate.Rejection(job_id, "requests", asked, f"requests a node can hold, but {too_big}")
