"""Whether a submitted job can become a pod of this cluster: the checks a real cluster's admission and a
first look at its nodes would make, each failure a Rejection naming the field and what was expected.

Kept apart from the decision process because it is pure: the job, its profile and the backend's answers
in, a pod shape (with the record's request columns filled) or a Rejection out.
"""

from __future__ import annotations

import weakref

from kubernetes import client

from batkube_py.adapter import podshape, translate
from batkube_py.adapter.norequest import NoRequest
from batkube_py.adapter.outputs import PodRecord
from batkube_py.cluster import fit
from batkube_py.cluster.base import Backend


def shape_for(
    record: PodRecord, job: dict | None, profile: dict | None, no_request: NoRequest | None = None
) -> podshape.Shape | translate.Rejection:
    """The job's pod shape, with the record's scheduler, priority and request columns filled from it;
    `no_request` decides what a job without a cpu request asks for (norequest.py)."""
    shape = podshape.pod_shape(record.job_id, job, profile)
    if isinstance(shape, translate.Rejection):
        return shape
    if no_request is not None:
        shape = no_request.apply(shape)
    record.scheduler, record.priority = shape.scheduler, shape.priority
    record.cpu_request, record.memory_request = shape.cpu, shape.memory
    return shape


def refusal(record: PodRecord, pod: client.V1Pod, backend: Backend) -> translate.Rejection | None:
    """Why no scheduler of this cluster could ever place the pod (none serves it, no node can hold it);
    `pod` may be its shape's template: neither question depends on the name."""
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


def admit(
    record: PodRecord,
    job: dict | None,
    profile: dict | None,
    backend: Backend,
    admitted: weakref.WeakSet[podshape.Shape],
    refused: str | None = None,
    no_request: NoRequest | None = None,
) -> podshape.Shape | translate.Rejection:
    """The job's pod shape if the cluster may ever run it; `admitted`: shapes some node can hold, while
    in use (a job with fields of its own has a shape of its own); `refused`: why no job is admitted."""
    shape = shape_for(record, job, profile, no_request)
    if isinstance(shape, translate.Rejection):
        return shape
    if refused is not None:
        return translate.Rejection(record.job_id, "-", "-", refused)
    if shape not in admitted:
        if (why := refusal(record, shape.template, backend)) is not None:
            return why
        admitted.add(shape)  # the cluster's nodes never change what fits them empty
    return shape


class PodToBe:
    """An admitted job's pod, built once the reply that admitted it has left (Batsim is busy with it
    then), or on the spot if a scheduling cycle needs it first."""

    __slots__ = ("job_id", "name", "shape", "_pod")

    def __init__(self, job_id: str, name: str, shape: podshape.Shape):
        self.job_id, self.name, self.shape = job_id, name, shape
        self._pod: client.V1Pod | None = None

    def pod(self) -> client.V1Pod:
        if self._pod is None:
            self._pod = podshape.assemble(self.job_id, self.name, self.shape)
        return self._pod
