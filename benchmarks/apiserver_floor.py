"""What the control plane alone needs for the 10k bench's pods, with no simulator and no lockstep.

The 10k bench (k8s_10k_jobs.json on k8s_1000nodes.xml, `apiserver_sync.py --10k`) makes each pod go
through a create, a scheduling cycle and binding, and a delete. Here the same pods (the workload's cpu and
memory requests) go through the same requests as fast as the apiserver takes them, on 1,000 Ready nodes of
the bench's shape (8 cores, 32 GiB, 110 pods): created 8 at a time in waves of 2,000 (the whole workload
does not fit at once), each wave deleted once the scheduler, on the wall clock, has bound all of it. The
wall time and the CPU of etcd, kube-apiserver and kube-scheduler are a floor for any way of running the
bench on this machine: a Batsim step cannot batch writes across simulated instants the way this does.

    python benchmarks/apiserver_floor.py [--controlplane-dir D] [--wave 2000] [--jobs N] [--nodes N]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from _runs import BENCH
from kubernetes import client

from batkube_py.cluster.apicalls import ApiCalls
from batkube_py.cluster.kubelet import SIMULATED, create_nodes
from batkube_py.controlplane.kubehttp import KubeHttp

NODES, CORES, MEMORY, PODS = 1000, "8", "32Gi", "110"
NAMESPACE = "batkube-floor"


def process_cpu(pids: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, pid in pids.items():
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        out[name] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return out


def pod_body(job: dict, profiles: dict) -> bytes:
    prof = profiles[job["profile"]]
    requests = {k: prof[k] for k in ("cpu", "memory") if k in prof}
    container = {"name": "job", "image": "batkube/none", "resources": {"requests": requests}}
    tolerate = [{"key": SIMULATED, "operator": "Exists"}]  # the run's nodes' taint (kubelet.py)
    spec = {"containers": [container], "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 0, "tolerations": tolerate}  # fmt: skip
    return json.dumps({"metadata": {"name": f"job-{job['id']}"}, "spec": spec}).encode()


def floor(
    http: KubeHttp, pids: dict[str, int], jobs: list[dict], profiles: dict, wave: int, nodes: int
) -> tuple[float, dict[str, float]]:
    """The bulk run; returns its wall seconds and each component's CPU seconds."""
    pool = ThreadPoolExecutor(8)
    shape = {"cpu": CORES, "memory": MEMORY, "pods": PODS}
    status = client.V1NodeStatus(capacity=shape, allocatable=shape)
    made = [client.V1Node(metadata=client.V1ObjectMeta(name=f"floor-{i}"), spec=client.V1NodeSpec(),
                          status=status.model_copy()) for i in range(nodes)]  # fmt: skip
    create_nodes(made, "floor", ApiCalls(), http)  # as a run makes them: Ready, tainted for its pods only
    http.request("POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": NAMESPACE}}).encode())
    sa = {"metadata": {"name": "default"}}  # no controller-manager makes it
    http.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts", json.dumps(sa).encode())
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    unbound = f"{pods}?fieldSelector=spec.nodeName%3D&limit=1"
    before, start = process_cpu(pids), time.perf_counter()
    for i in range(0, len(jobs), wave):
        part = jobs[i : i + wave]
        list(pool.map(lambda j: http.request("POST", pods, pod_body(j, profiles)), part))
        while http.request("GET", unbound)["items"]:
            time.sleep(0.05)
        list(pool.map(lambda j: http.delete_pod(f"job-{j['id']}", NAMESPACE), part))
    wall = time.perf_counter() - start
    pool.shutdown()
    return wall, {k: v - before[k] for k, v in process_cpu(pids).items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--controlplane-dir", type=Path, help="a control plane already up (no run driving it)")
    ap.add_argument("--wave", type=int, default=2000)
    ap.add_argument("--jobs", type=int, help="only the workload's first N jobs (a smaller run)")
    ap.add_argument("--nodes", type=int, default=NODES)
    args = ap.parse_args()
    from kubernetes import config

    from batkube_py.controlplane.manager import ControlPlane

    workload = json.loads((BENCH / "k8s_10k_jobs.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        cp = ControlPlane(args.controlplane_dir or Path(tmp) / "cp")
        st = cp.state() if args.controlplane_dir else cp.up()
        try:
            v = st.versions
            print(f"kube-apiserver, kube-scheduler {v.get('kubernetes')}, etcd {v.get('etcd')}")
            http = KubeHttp(config.new_client_from_config(config_file=str(st.kubeconfig)))
            jobs = workload["jobs"][: args.jobs]
            wall, used = floor(http, st.pids, jobs, workload["profiles"], args.wave, args.nodes)
            cpu = ", ".join(f"{k} {v:.1f} s" for k, v in used.items())
            print(f"{len(jobs)} pods created, bound and deleted in {wall:.1f} s wall; control plane CPU "
                  f"{cpu} (total {sum(used.values()):.1f} s)")  # fmt: skip
        finally:
            if not args.controlplane_dir:
                cp.down(remove=True)


if __name__ == "__main__":
    main()
