"""The order of kube-scheduler's snapshot node list: its node tree, zone by zone in round robin.

Upstream's cache keeps node names per failure zone (backend/cache/node_tree.go): zones in the order
their first node was added, nodes of a zone in the order they were added. Each snapshot rebuild lists
them one node of each zone in turn (the first node of every zone, then the second, ...), and that list
is what filtering walks from nextStartNodeIndex, what a score tie's heap is built over and what
preemption offsets into. Nodes without zone labels share the zone "", so a platform without zones keeps
its order. batkube creates the nodes one by one in the platform's order (cluster/kubelet.py), and the
twin (cluster/embedded.py) lays out its node table in the order this module gives that list.

A node whose zone labels change moves to the end of its new zone in upstream's tree, but the snapshot's
list is rebuilt only when a node is added or removed, which a run never does: the order stays the one
of the start.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubernetes import client

ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
ZONE = "topology.kubernetes.io/zone"
REGION_BETA = "failure-domain.beta.kubernetes.io/region"
REGION = "topology.kubernetes.io/region"


def zone_key(labels: dict[str, str] | None) -> str:
    """component-helpers' GetZoneKey: region and zone (the deprecated beta labels first); "" for none."""
    labels = labels or {}
    zone = labels[ZONE_BETA] if ZONE_BETA in labels else labels.get(ZONE, "")
    region = labels[REGION_BETA] if REGION_BETA in labels else labels.get(REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def interleave(keys: Sequence[str]) -> list[int]:
    """Positions of `keys` (each item's zone key, in the order the items were added) as the node tree
    lists them: the i-th item of every zone, zones in order of first appearance, for i = 0, 1, ..."""
    zones: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        zones.setdefault(key, []).append(i)
    if len(zones) <= 1:
        return list(range(len(keys)))
    out: list[int] = []
    depth = max(len(members) for members in zones.values())
    for level in range(depth):
        out.extend(members[level] for members in zones.values() if level < len(members))
    return out


def tree_order(nodes: Sequence[client.V1Node]) -> list[client.V1Node]:
    """`nodes`, given in the order they were added to the cluster, in the order of the node tree's list."""
    return [nodes[i] for i in interleave([zone_key(n.metadata.labels) for n in nodes])]
