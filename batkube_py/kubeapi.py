"""Kubernetes vocabulary every layer shares: API names as Kubernetes defines them, batkube's own
annotations on nodes, and JSON into the client's models. The twin (scheduler/) reads nodes and pods
with it without depending on the adapter that made them."""

from __future__ import annotations

import re
from typing import Any

from kubernetes import client

RESOURCE_ID_ANNOTATION = "batkube.io/resource-id"

_QUALIFIED_NAME = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)

_api = client.ApiClient()


def model(value: Any, kind: str) -> Any:
    """JSON → the client's model of `kind` ("V1NodeAffinity"), with the client's own mapping."""
    return _api._ApiClient__deserialize(value, kind)


def is_extended_resource(name: str) -> bool:
    """Kubernetes' IsExtendedResourceName: a domain-prefixed name outside kubernetes.io (nvidia.com/gpu).

    A host property with such a key and a whole-number value is an extended resource, not a label:
    `nvidia.com/gpu="2"` puts 2 GPUs in the node's capacity and allocatable. `topology.kubernetes.io/zone`
    stays a label (kubernetes.io names are native), and so does any property whose value is not a whole
    number (`example.com/rack="r1"`).
    """
    return (
        "/" in name
        and "kubernetes.io/" not in name
        and not name.startswith("requests.")
        and _QUALIFIED_NAME.match(name) is not None
    )


def resource_id(node: client.V1Node) -> int:
    return int(node.metadata.annotations[RESOURCE_ID_ANNOTATION])
