"""The kubelets' part in creating the run's nodes: Ready from their creation, tainted so that nothing but
the run's pods lands there, in the platform's order."""

from __future__ import annotations

from kubernetes import client

from batkube_py.cluster.apicalls import ApiCalls
from batkube_py.controlplane.kubehttp import KubeHttp

SIMULATED = "batkube.io/simulated"
NOT_READY = "node.kubernetes.io/not-ready"


def create_nodes(nodes: list[client.V1Node], run_id: str, calls: ApiCalls, http: KubeHttp) -> None:
    """kube-scheduler's node tree keeps the order nodes were added in (per zone), and with
    `parallelism: 1` that order decides score ties (scheduler/ties.py): created one by one, in the
    platform's order. A node carries its status on create (the apiserver keeps it), so it is Ready at
    once; only the TaintNodesByCondition admission plugin's not-ready taint, which no kubelet and no node
    controller will lift here, needs a patch (a few at once: patches change no order). batkube's own
    control plane runs without that plugin (manager.py), so the patches are for other apiservers."""
    ready = client.V1NodeCondition(type="Ready", status="True", reason="KubeletReady",
                                   message="simulated by batkube")  # fmt: skip
    for node in nodes:
        node.metadata.labels = {**(node.metadata.labels or {}), SIMULATED: run_id}
        taint = client.V1Taint(key=SIMULATED, value="true", effect="NoSchedule")
        node.spec.taints = [*(node.spec.taints or []), taint]
        node.spec.unschedulable = None
        node.status.conditions = [ready]
    made = [(node, calls(f"create node {node.metadata.name}", http.create_node, node)) for node in nodes]
    calls.all([fix for node, out in made if (fix := _ready_fix(node, out or {}, http))])


def _ready_fix(node: client.V1Node, made: dict, http: KubeHttp) -> tuple | None:
    taints = (made.get("spec") or {}).get("taints") or []
    if not any(t.get("key") == NOT_READY for t in taints):
        return None
    name = node.metadata.name
    keep = {"spec": {"taints": [t.to_dict() for t in node.spec.taints]}}
    return (f"taint node {name}", http.patch_node, (name, keep), {})
