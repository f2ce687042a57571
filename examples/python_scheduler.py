"""A complete Kubernetes scheduler in ~100 lines of Python, with nothing Batkube-specific in it.

It serves pods whose spec.schedulerName is `python-scheduler` (first fit by CPU, in creation order),
binds them through the Binding subresource like kube-scheduler does, and marks the ones that fit
nowhere with PodScheduled=False/Unschedulable. It learns about freed resources only from pod deletes
and terminal phases. Run it against any cluster:

    python examples/python_scheduler.py --kubeconfig ~/.kube/config

`batkube run --backend apiserver --scheduler-name python-scheduler` then drives it in simulated time
exactly as it would a real cluster: that is what "unmodified" means.
"""

from __future__ import annotations

import argparse
import threading

from kubernetes import client, config, watch

NAME = "python-scheduler"


def milli(q: str) -> int:
    q = str(q)
    return int(float(q[:-1])) if q.endswith("m") else int(float(q) * 1000)


def cpu_request(pod: client.V1Pod) -> int:
    requests = [(c.resources.requests or {}) if c.resources else {} for c in pod.spec.containers]
    return sum(milli(r.get("cpu", "0")) for r in requests)


class Scheduler:
    def __init__(self, core: client.CoreV1Api):
        self.core = core
        self.lock = threading.Lock()
        self.capacity: dict[str, int] = {}
        self.used: dict[str, int] = {}
        self.assigned: dict[str, tuple[str, int]] = {}  # pod uid -> (node, cpu)
        self.pending: dict[str, client.V1Pod] = {}  # pod uid -> pod, insertion = creation order

    def on_node(self, kind: str, node: client.V1Node) -> None:
        with self.lock:
            if kind == "DELETED" or node.spec.unschedulable:
                self.capacity.pop(node.metadata.name, None)
            else:
                self.capacity[node.metadata.name] = milli(node.status.allocatable.get("cpu", "0"))
                self.used.setdefault(node.metadata.name, 0)
        self.schedule()

    def on_pod(self, kind: str, pod: client.V1Pod) -> None:
        uid = pod.metadata.uid
        gone = kind == "DELETED" or pod.status.phase in ("Succeeded", "Failed")
        with self.lock:
            if gone:
                self.pending.pop(uid, None)
                if uid in self.assigned:
                    node, cpu = self.assigned.pop(uid)
                    self.used[node] = self.used.get(node, 0) - cpu
            elif pod.spec.node_name:
                self.pending.pop(uid, None)
                if uid not in self.assigned:
                    self.assigned[uid] = (pod.spec.node_name, cpu_request(pod))
                    self.used[pod.spec.node_name] = self.used.get(pod.spec.node_name, 0) + cpu_request(pod)
            elif pod.spec.scheduler_name == NAME and uid not in self.assigned:  # not a stale event
                self.pending.setdefault(uid, pod)
        self.schedule()

    def schedule(self) -> None:
        with self.lock:
            for uid, pod in list(self.pending.items()):
                cpu = cpu_request(pod)
                fits = [n for n in sorted(self.capacity) if self.used[n] + cpu <= self.capacity[n]]
                node = fits[0] if fits else None
                if node is None:
                    self.mark_unschedulable(pod)
                    continue
                self.bind(pod, node)
                del self.pending[uid]
                self.assigned[uid] = (node, cpu)
                self.used[node] += cpu

    def bind(self, pod: client.V1Pod, node: str) -> None:
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=pod.metadata.name),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        # _preload_content=False: the client cannot deserialize the Status a Binding POST returns.
        try:
            self.core.create_namespaced_binding(pod.metadata.namespace, body, _preload_content=False)
        except client.ApiException as exc:
            if exc.status not in (404, 409):  # gone, or already bound: nothing to do
                raise

    def mark_unschedulable(self, pod: client.V1Pod) -> None:
        cond = {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": f"0/{len(self.capacity)} nodes are available: Insufficient cpu",
        }
        try:
            self.core.patch_namespaced_pod_status(
                pod.metadata.name, pod.metadata.namespace, {"status": {"conditions": [cond]}}
            )
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def follow(list_fn, handler) -> None:
    """List then watch forever; relist when the watch expires."""
    while True:
        items = list_fn()
        for obj in items.items:
            handler("ADDED", obj)
        try:
            for ev in watch.Watch().stream(list_fn, resource_version=items.metadata.resource_version):
                handler(ev["type"], ev["object"])
        except client.ApiException as exc:
            if exc.status != 410:
                raise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", default=None)
    args = parser.parse_args()
    config.load_kube_config(args.kubeconfig)
    core = client.CoreV1Api()
    sched = Scheduler(core)
    threading.Thread(target=follow, args=(core.list_node, sched.on_node), daemon=True).start()
    follow(core.list_pod_for_all_namespaces, sched.on_pod)


if __name__ == "__main__":
    main()
