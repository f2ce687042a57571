"""The platform's compute hosts as the cluster's nodes, and each node's EXECUTE_JOB allocation."""

from __future__ import annotations

from kubernetes import client
from procset import ProcSet

from batkube_py import kubeapi
from batkube_py.adapter import translate
from batkube_py.protocol.models import Resource


class Hosts:
    def __init__(self) -> None:
        self.nodes: dict[str, client.V1Node] = {}
        self.node_of_host: dict[int, str] = {}
        self.ids = ProcSet()
        self.alloc: dict[str, ProcSet] = {}  # node → its EXECUTE_JOB allocation
        self.alloc_text: dict[str, str] = {}
        self.host_of: dict[str, int] = {}  # node → its Batsim resource id

    def build(
        self, resources: list[Resource], labels: dict[str, dict[str, str]]
    ) -> tuple[list[client.V1Node], list[str]]:
        """The nodes, and what makes the platform unusable (empty when it is fine). `labels`: host
        name → extra node labels (topology.py); a host property of the same key wins."""
        problems = []
        nodes = []
        try:
            nodes = [translate.node_from_resource(r) for r in resources]
        except translate.TranslationError as exc:
            problems.append(f"the platform cannot become a cluster: {exc}")
        if not resources:
            problems.append("the platform has no compute hosts (only a master): there is nowhere to run pods")
        names = [n.metadata.name for n in nodes]
        if len(set(names)) != len(names):
            problems.append("two hosts of the platform map to the same node name")
        for node in nodes:
            extra = labels.get(node.metadata.annotations["batkube.io/host"], {})
            for k, v in extra.items():
                node.metadata.labels.setdefault(translate.label_key(k), translate.label_value(v))
        self.nodes = {n.metadata.name: n for n in nodes}
        self.node_of_host = {kubeapi.resource_id(n): n.metadata.name for n in nodes}
        self.ids = ProcSet(*self.node_of_host)
        self.alloc = {n.metadata.name: translate.alloc_for(n) for n in nodes}
        self.alloc_text = {name: str(alloc) for name, alloc in self.alloc.items()}
        self.host_of = {name: alloc[0] for name, alloc in self.alloc.items()}
        return nodes, problems

    def nodes_in(self, resources: str | None) -> list[str] | None:
        """The nodes of a NOTIFY's set of host ids ('0-3 7'), None if it is not one."""
        try:
            ids = ProcSet.from_str(resources or "")
        except (ValueError, TypeError):
            return None
        # intersected first: the set may span 10^11 ids, the platform a few thousand hosts
        return [self.node_of_host[i] for i in ids & self.ids]
