"""What Kueue's admission changes in a pod: pkg/podset (FromAssignment, Merge) as the pod integration's
`prepare` applies it when it lifts the admission gate.

The flavors' `nodeLabels` join the pod's nodeSelector and their tolerations its tolerations. One module
for both backends: the twin applies it to the pods it admits (cluster/admission.py), and the real
backend applies it to the kube-scheduler twin that shadows the real scheduler (cluster/realkueue.py),
checked against the nodeSelector the real Kueue wrote.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubernetes import client

from batkube_py.kueue.cache.snapshot import Flavor


class MergeError(ValueError):
    """The pod already selects another value for a key the flavor sets (Kueue's Merge refuses it)."""


def flavor_changes(
    flavors: Mapping[str, Flavor], used: Iterable[str]
) -> tuple[dict[str, str], list[client.V1Toleration]]:
    """The node labels and tolerations the used flavors add, in flavor-name order."""
    names = sorted(set(used))
    labels = {k: v for f in names for k, v in flavors[f].node_labels.items()}
    tolerations = [t for f in names for t in flavors[f].tolerations]
    return labels, tolerations


def merge(spec: client.V1PodSpec, labels: Mapping[str, str], tolerations: list[client.V1Toleration]) -> None:
    """PodSetInfo.Merge on the pod's spec: a nodeSelector key set to another value is an error."""
    current = dict(spec.node_selector or {})
    for k, v in labels.items():
        if current.get(k, v) != v:
            raise MergeError(f"conflict for nodeSelector {k}: the pod has {current[k]!r}, the flavor {v!r}")
    if labels:
        spec.node_selector = {**current, **labels}
    have = list(spec.tolerations or [])
    for t in tolerations:
        if t not in have:
            have.append(t)
    if tolerations:
        spec.tolerations = have
