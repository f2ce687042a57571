"""Small builders for the Kueue twin's tests: queues files as YAML text, workloads, a twin to drive."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

import yaml
from kubernetes import client

from batkube_py.inputs.queues import QueuesConfig, load_queues
from batkube_py.kueue.twin import KueueTwin
from batkube_py.kueue.workload import Workload

API = "kueue.x-k8s.io/v1beta2"


def flavor(name: str, **spec) -> dict:
    return {"apiVersion": API, "kind": "ResourceFlavor", "metadata": {"name": name}, "spec": spec}


def cq(name: str, quotas: dict, cohort: str | None = None, **spec) -> dict:
    """A ClusterQueue with one resource group; quotas: flavor → {resource: nominal or {nominalQuota, ...}}."""
    covered = sorted({r for res in quotas.values() for r in res})
    flavors = []
    for f, res in quotas.items():
        flavors.append(
            {
                "name": f,
                "resources": [
                    {"name": r, **(v if isinstance(v, dict) else {"nominalQuota": v})}
                    for r, v in sorted(res.items())
                ],
            }
        )
    body = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
        **spec,
    }
    if cohort:
        body["cohortName"] = cohort
    return {"apiVersion": API, "kind": "ClusterQueue", "metadata": {"name": name}, "spec": body}


def lq(name: str, cluster_queue: str) -> dict:
    return {
        "apiVersion": API,
        "kind": "LocalQueue",
        "metadata": {"name": name},
        "spec": {"clusterQueue": cluster_queue},
    }


def cohort(name: str, parent: str | None = None, **spec) -> dict:
    body = {**({"parentName": parent} if parent else {}), **spec}
    return {"apiVersion": API, "kind": "Cohort", "metadata": {"name": name}, "spec": body}


def wpc(name: str, value: int) -> dict:
    return {"apiVersion": API, "kind": "WorkloadPriorityClass", "metadata": {"name": name}, "value": value}


def write(tmp: Path, docs: list[dict] | str, name: str = "queues.yaml") -> Path:
    path = tmp / name
    path.write_text(
        textwrap.dedent(docs) if isinstance(docs, str) else yaml.safe_dump_all(docs, sort_keys=False)
    )
    return path


def config(tmp: Path, *docs: dict) -> QueuesConfig:
    """The documents, with a LocalQueue named after each ClusterQueue added."""
    extra = [lq(d["metadata"]["name"], d["metadata"]["name"]) for d in docs if d["kind"] == "ClusterQueue"]
    return load_queues(write(tmp, [*docs, *extra]))


def pod_template(cpu: float | str, node_selector: dict | None = None, tolerations=None) -> client.V1Pod:
    requests = {"cpu": str(cpu)}
    container = client.V1Container(name="c", resources=client.V1ResourceRequirements(requests=requests))
    spec = client.V1PodSpec(containers=[container], node_selector=node_selector, tolerations=tolerations)
    return client.V1Pod(metadata=client.V1ObjectMeta(name="t"), spec=spec)


class Driver:
    """A twin with workloads submitted by name; times and submission order as given."""

    def __init__(self, cfg: QueuesConfig):
        self.twin = KueueTwin(cfg)
        self._seq = itertools.count(1)

    def submit(
        self, name: str, cq: str, cpu: float, t: float = 0.0, priority: int = 0, pods: int = 1, **template
    ) -> Workload:
        tpl = pod_template(cpu, **template)
        per_pod = {"cpu": round(cpu * 1000)}
        wl = Workload(
            name, cq, cq, priority, t, next(self._seq), per_pod, tpl, [f"{name}-{i}" for i in range(pods)],
            plain=pods == 1,
        )
        self.twin.submit(wl)
        return wl

    def run(self, now: float = 0.0) -> tuple[list[str], list[str]]:
        d = self.twin.run(now)
        return [w.name for w in d.admitted], [t.workload.name for t in d.preempted]

    def reasons(self, now: float = 0.0) -> list[tuple[str, str]]:
        d = self.twin.run(now)
        return [(t.workload.name, t.reason) for t in d.preempted]

    def finish(self, name: str) -> None:
        self.twin.finish(self.twin.workloads[name])

    def usage(self, cq: str) -> dict:
        return {f"{f}/{r}": v for (f, r), v in self.twin.cache.cqs[cq].usage.items() if v}

    def flavors(self, name: str) -> dict:
        return self.twin.workloads[name].flavors
