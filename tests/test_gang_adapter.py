"""Multi-host jobs as pod groups, from the adapter's side: EXECUTE_JOB with the distinct hosts and a
mapping, rejection of a group that never fits, one disrupted pod killing the whole job (messages and
end to end on the Batsim double)."""

import csv
import json
from pathlib import Path

import pytest
from batsim_messages import begins, decided, host, message, submitted

from batkube_py.adapter.decision import DecisionProcess
from batkube_py.adapter.gangjobs import allocation
from batkube_py.adapter.outputs import RunOutputs
from batkube_py.cluster.embedded import EmbeddedCluster
from batkube_py.inputs.platforms import cluster_platform
from batkube_py.protocol.reply import Reply, ReplyRuleError
from batkube_py.runs.run import RunConfig, run

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = str(ROOT / "tests" / "batsim_double" / "batsim")
PROFILES = {
    "half": {"type": "delay", "delay": 30, "cpu": "2"},
    "whole": {"type": "delay", "delay": 30, "cpu": "2", "onePodPerNode": True},
}


def dp(tmp_path=None, factory=None):
    outputs = RunOutputs(tmp_path) if tmp_path else None
    return DecisionProcess(factory or (lambda nodes: EmbeddedCluster(nodes, seed=0)), outputs)


def start(p, hosts=2, core="4"):
    return decided(p, message(0.0, begins([host(i, core=core) for i in range(hosts)], PROFILES)))


def test_allocation_and_mapping_follow_batsim_transcripts():
    # transcripts-gang p4: res 4 on hosts 0-1, executors 0,1 on the first and 2,3 on the second
    assert allocation([0, 0, 1, 1]) == (
        allocation([0, 0, 1, 1])[0],
        "0-1",
        {"0": "0", "1": "0", "2": "1", "3": "1"},
    )
    assert allocation([7, 2, 7])[1:] == ("2 7", {"0": "1", "1": "0", "2": "1"})
    assert allocation([3, 1, 2])[1:] == ("1-3", None)  # distinct hosts: a plain alloc of res hosts


def test_reply_checks_the_mapping():
    r = Reply(1.0)
    alloc = allocation([0, 0, 1, 1])[0]
    with pytest.raises(ReplyRuleError):
        r.execute("w0!1", alloc, 4, "0-1", {"0": "0", "1": "2", "2": "1", "3": "1"})
    with pytest.raises(ReplyRuleError):
        r.execute("w0!1", alloc, 3, "0-1", {"0": "0", "1": "0", "2": "1", "3": "1"})
    r.execute("w0!1", alloc, 4, "0-1", {"0": "0", "1": "0", "2": "1", "3": "1"})
    assert len(r) == 1


def test_sharing_pods_give_one_execute_job_with_a_mapping(tmp_path):
    p = dp(tmp_path)
    start(p)
    out = decided(p, message(1.0, submitted(1.0, "w0!1", "half", res=4)))
    assert len(out) == 1 and out[0][0] == "EXECUTE_JOB"
    data = out[0][1]
    assert data["job_id"] == "w0!1" and data["alloc"] == "0-1"
    assert sorted(data["mapping"]) == ["0", "1", "2", "3"] and sorted(data["mapping"].values()) == [
        "0",
        "0",
        "1",
        "1",
    ]
    record = p.records["w0!1"]
    assert record.group == "w0-1" and record.group_size == 4 and record.node == "node-0 node-1"


def test_one_pod_per_node_gives_distinct_hosts_and_no_mapping():
    p = dp()
    start(p, hosts=4)
    out = decided(p, message(1.0, submitted(1.0, "w0!1", "whole", res=3)))
    assert out == [("EXECUTE_JOB", {"job_id": "w0!1", "alloc": out[0][1]["alloc"]})]
    assert len(out[0][1]["alloc"].replace("-", " ").split()) >= 2
    from procset import ProcSet

    assert len(ProcSet.from_str(out[0][1]["alloc"])) == 3


def test_a_group_that_never_fits_is_rejected_at_once_with_its_reason(tmp_path):
    p = dp(tmp_path)
    start(p)
    out = decided(
        p,
        message(
            1.0,
            submitted(1.0, "w0!big", "half", res=5),
            submitted(1.0, "w0!spread", "whole", res=3),
            submitted(1.0, "w0!badflag", "half", res=2, onePodPerNode="yes"),
            submitted(1.0, "w0!ok", "half", res=2),
        ),
    )
    assert out[:3] == [("REJECT_JOB", {"job_id": j}) for j in ("w0!big", "w0!spread", "w0!badflag")]
    assert out[3][0] == "EXECUTE_JOB"
    p.outputs.close()
    rows = {r["job_id"]: r for r in csv.DictReader((tmp_path / "rejected.csv").open())}
    assert "holds 4 of its 5 pods" in rows["w0!big"]["reason"] and rows["w0!big"]["group"] == "w0-big"
    assert "one pod per node" in rows["w0!spread"]["reason"]
    assert rows["w0!badflag"]["field"] == "onePodPerNode"


def test_a_backend_without_groups_rejects_them_with_the_reason(tmp_path):
    class NoGroups(EmbeddedCluster):
        def supports_groups(self):
            return False

    p = dp(tmp_path, lambda nodes: NoGroups(nodes))
    start(p)
    assert decided(p, message(1.0, submitted(1.0, "w0!1", "half", res=2))) == [
        ("REJECT_JOB", {"job_id": "w0!1"})
    ]
    p.outputs.close()
    text = (tmp_path / "rejected.csv").read_text()
    assert "does not schedule pod groups" in text and "kube-scheduler 1.37.2 and --sync queue" in text


def test_a_backend_says_why_it_has_no_groups(tmp_path):
    """The real backend names its own reason (an apiserver that does not serve PodGroups)."""

    class NoPodGroupApi(EmbeddedCluster):
        no_groups_reason = "1: the apiserver does not serve scheduling.k8s.io/v1beta1 PodGroups"

        def supports_groups(self):
            return False

    p = dp(tmp_path, lambda nodes: NoPodGroupApi(nodes))
    start(p)
    assert decided(p, message(1.0, submitted(1.0, "w0!1", "half", res=2))) == [
        ("REJECT_JOB", {"job_id": "w0!1"})
    ]
    p.outputs.close()
    assert "does not serve scheduling.k8s.io/v1beta1 PodGroups" in (tmp_path / "rejected.csv").read_text()


def test_pod_group_gates_only_from_kubernetes_137():
    from batkube_py.controlplane.manager import State, groups_enabled

    def state(version):
        return State(dir="/x", kubeconfig="/x/k", server="", etcd_port=1, apiserver_port=2, scheduler_port=3,
                     versions={"kubernetes": version})  # fmt: skip

    assert groups_enabled(state("v1.37.2")) and groups_enabled(state("v1.38.0"))
    assert not groups_enabled(state("v1.32.6")) and not groups_enabled(state("unknown"))


def _rows(tmp_path, job_id):
    return [r for r in csv.DictReader((tmp_path / "out" / "pods.csv").open()) if r["job_id"] == job_id]


def _run(tmp_path, jobs, profiles, nodes, cores, extra=(), record=False):
    (tmp_path / "p.xml").write_text(cluster_platform(nodes, cores))
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": nodes, "jobs": jobs, "profiles": profiles}))
    cfg = RunConfig(tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "out", batsim=DOUBLE, progress=False,
                    batsim_args=tuple(extra), record_decisions=record)  # fmt: skip
    summary = run(cfg)
    rows = list(csv.DictReader((tmp_path / "out" / "pods.csv").open()))
    batsim = {r["job_id"]: r for r in csv.DictReader((tmp_path / "out" / "out_jobs.csv").open())}
    return summary, {r["job_id"]: r for r in rows}, batsim


def test_gang_workload_end_to_end_on_the_double(tmp_path):
    jobs = [
        {"id": "shared", "subtime": 0, "res": 4, "profile": "half"},  # 2 hosts, with a mapping
        {"id": "spread", "subtime": 0, "res": 2, "profile": "whole"},
        {"id": "solo", "subtime": 1, "res": 1, "profile": "half"},
        {"id": "never", "subtime": 2, "res": 9, "profile": "half"},
    ]
    summary, pods, batsim = _run(tmp_path, jobs, PROFILES, 2, "4")
    assert summary["error"] is None and summary["over_allocations"] == 0
    assert summary["jobs_succeeded"] == 3 and summary["jobs_rejected"] == 1
    shared, spread = pods["w0!shared"], pods["w0!spread"]
    assert shared["group"] == "w0-shared" and shared["group_size"] == "4"
    rows = _rows(tmp_path, "w0!shared")  # one row per pod, where it ran
    assert [r["pod"] for r in rows] == [f"w0-shared-{i}" for i in range(4)]
    assert sorted(r["node"] for r in rows) == ["node-0", "node-0", "node-1", "node-1"]
    assert {r["resource_id"] for r in rows} == {"0", "1"} and {r["start_time"] for r in rows} == {
        shared["start_time"]
    }
    assert batsim["shared"]["requested_number_of_resources"] == "4"
    assert (
        batsim["shared"]["allocated_resources"] == "0-1" and batsim["spread"]["allocated_resources"] == "0-1"
    )
    # the spread group needs both hosts whole: it starts after the shared one, at its group backoff
    assert float(spread["start_time"]) >= float(shared["finish_time"])
    assert "holds 4 of its 9 pods" in (tmp_path / "out" / "rejected.csv").read_text()
    assert summary["gang_jobs"] == 3 and summary["max_group_size"] == 9 and summary["gang_pods"] == 15
    waits = [float(r["bind_time"]) - float(r["submit_time"]) for r in (shared, spread)]
    assert summary["mean_gang_wait"] == pytest.approx(sum(waits) / 2)


def test_explain_tells_a_groups_story(tmp_path):
    from click.testing import CliRunner

    from batkube_py.cli.app import main

    jobs = [
        {"id": "a", "subtime": 0, "res": 4, "profile": "half"},
        {"id": "b", "subtime": 0, "res": 4, "profile": "half"},
    ]
    summary, _, _ = _run(tmp_path, jobs, PROFILES, 2, "4", record=True)
    assert summary["jobs_succeeded"] == 2
    out = CliRunner().invoke(main, ["explain", str(tmp_path / "out"), "w0!b"]).output
    assert "pod group w0-b: all 4 pods bound" in out and "unschedulable group cycle" in out
    assert "0 of minCount 4 pods could be placed" in out and "members placed in upstream's order" in out


def test_a_node_failure_under_a_group_kills_the_whole_job_and_it_runs_again_as_one(tmp_path):
    events = tmp_path / "events.txt"
    events.write_text('{"timestamp": 10, "type": "machine_unavailable", "resources": "1"}\n'
                      '{"timestamp": 50, "type": "machine_available", "resources": "1"}\n')  # fmt: skip
    jobs = [{"id": "g", "subtime": 0, "res": 2, "profile": "whole"}]
    summary, pods, _ = _run(tmp_path, jobs, PROFILES, 2, "4", ["--events", str(events)])
    assert summary["error"] is None, summary["error"]
    assert summary["jobs_node_failures"] == 1 and summary["jobs_resubmitted"] == 1
    killed = pods["w0!g"]
    assert killed["state"] == "Killed" and "node-1 failed" in killed["reason"]
    again = pods["w0!g#r1"]
    assert again["state"] == "Succeeded" and again["group_size"] == "2" and float(again["start_time"]) >= 50
    assert sorted(r["node"] for r in _rows(tmp_path, "w0!g#r1")) == ["node-0", "node-1"]


def test_preempting_one_pod_of_a_group_kills_the_whole_job(tmp_path):
    jobs = [
        {"id": "g", "subtime": 0, "res": 2, "profile": "whole"},
        {"id": "hi", "subtime": 5, "res": 1, "profile": "big", "priority": 100},
    ]
    profiles = {**PROFILES, "big": {"type": "delay", "delay": 10, "cpu": "4"}}
    summary, pods, _ = _run(tmp_path, jobs, profiles, 2, "4")
    assert summary["error"] is None and summary["jobs_preempted"] == 1
    assert pods["w0!g"]["state"] == "Killed" and "preempted by w0-hi" in pods["w0!g"]["reason"]
    again = pods["w0!g#r1"]
    assert again["state"] == "Succeeded" and float(again["start_time"]) >= float(pods["w0!hi"]["finish_time"])


TWO_RACKS = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="rack0" prefix="node-" suffix="" radical="0-1" speed="1Gf" bw="1.25GBps" lat="50us"
      bb_bw="2.5GBps" bb_lat="5us"><prop id="core" value="4"/></cluster>
  <cluster id="rack1" prefix="node-" suffix="" radical="2-3" speed="1Gf" bw="1.25GBps" lat="50us"
      bb_bw="2.5GBps" bb_lat="5us"><prop id="core" value="4"/></cluster>
  <cluster id="master" prefix="master_host" suffix="" radical="0" speed="1Gf" bw="1.25GBps" lat="50us"
      bb_bw="2.5GBps" bb_lat="5us"><prop id="role" value="master"/></cluster>
  <link id="backbone" bandwidth="0.125GBps" latency="500us"/>
  <zoneRoute src="rack0" dst="rack1" gw_src="node-rack0_router" gw_dst="node-rack1_router">
    <link_ctn id="backbone"/></zoneRoute>
  <zoneRoute src="rack0" dst="master" gw_src="node-rack0_router" gw_dst="master_hostmaster_router">
    <link_ctn id="backbone"/></zoneRoute>
  <zoneRoute src="rack1" dst="master" gw_src="node-rack1_router" gw_dst="master_hostmaster_router">
    <link_ctn id="backbone"/></zoneRoute>
</zone>
</platform>
"""


def test_simgrid_clusters_become_node_labels_and_a_group_stays_in_one(tmp_path):
    from batkube_py.inputs.topology import host_labels

    (tmp_path / "p.xml").write_text(TWO_RACKS)
    labels = host_labels(tmp_path / "p.xml")
    assert labels["node-1"] == {"batkube.io/cluster": "rack0", "batkube.io/zone": "AS0"}
    assert labels["node-2"]["batkube.io/cluster"] == "rack1"
    jobs = [
        {"id": "a", "subtime": 0, "res": 2, "profile": "rack"},
        {"id": "b", "subtime": 0, "res": 2, "profile": "rack"},
        {"id": "wide", "subtime": 1, "res": 3, "profile": "rack"},
    ]
    profiles = {"rack": {"type": "delay", "delay": 10, "cpu": "3", "groupTopology": "batkube.io/cluster"}}
    (tmp_path / "w.json").write_text(json.dumps({"nb_res": 4, "jobs": jobs, "profiles": profiles}))
    cfg = RunConfig(tmp_path / "p.xml", tmp_path / "w.json", tmp_path / "out", batsim=DOUBLE, progress=False)
    summary = run(cfg)
    assert summary["error"] is None and summary["jobs_succeeded"] == 2 and summary["jobs_rejected"] == 1
    rack = {"node-0": "rack0", "node-1": "rack0", "node-2": "rack1", "node-3": "rack1"}
    a, b = ({rack[r["node"]] for r in _rows(tmp_path, j)} for j in ("w0!a", "w0!b"))
    assert len(a) == len(b) == 1 and a | b == {"rack0", "rack1"}
    rejected = (tmp_path / "out" / "rejected.csv").read_text()
    assert "any one domain of 'batkube.io/cluster' holds 2 of its 3 pods" in rejected
