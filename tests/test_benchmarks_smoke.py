"""The benchmark scripts still run and print their figures (at toy sizes: no timing is asserted here, the
figures themselves are read from full runs, docs/performance.md)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> str:
    out = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_scheduler_perf_prints_every_shape_with_its_throughput():
    text = _run("benchmarks/scheduler_perf.py", "--scale", "0.02")
    rows = dict(re.findall(r"^(\w+)/\S+\s+\d+\s+([\d,]+)\s", text, re.M))
    expected = {"SchedulingBasic", "SchedulingNodeAffinity", "SchedulingPodAffinity",
                "SchedulingPodAntiAffinity", "SchedulingPreferredPodAffinity",
                "SchedulingPreferredPodAntiAffinity", "TopologySpreading", "PreemptionBasic",
                "PreemptionAsync", "GangScheduling", "BasicScheduling"}  # fmt: skip
    assert set(rows) == expected, text
    assert all(int(v.replace(",", "")) > 0 for v in rows.values())


def test_adapter_overhead_replays_the_same_schedule_and_splits_the_adapters_cost():
    small = ("--platform", "platforms/cluster_16x1core.xml",
             "--workload", "workloads/burst_200_delay170.json")  # fmt: skip
    text = _run("benchmarks/adapter_overhead.py", *small)
    assert "schedules identical" in text and re.search(r"adapter overhead .* \d+\.\d\dx", text), text
    text = _run("benchmarks/adapter_overhead.py", *small, "--in-process", "--pause", "0.0001")
    handled = r"(\d+) messages handled in-process, ([\d.]+) ms between messages: +([\d.]+) s CPU"
    lines = re.findall(handled, text)
    assert [pause for _, pause, _ in lines] == ["0", "0.1"], text
    assert lines[0][0] == lines[1][0] and int(lines[0][0]) > 20 and "replies identical" in text


def test_apiserver_floor_creates_binds_and_deletes_every_pod_and_prints_each_process_cpu():
    from apiserver_support import require_binaries
    from shared_support import need

    require_binaries()
    need(ROOT.parent / "shared" / "bench" / "k8s_10k_jobs.json")
    text = _run("benchmarks/apiserver_floor.py", "--jobs", "300", "--nodes", "50", "--wave", "100")
    line = (
        r"300 pods created, bound and deleted in [\d.]+ s wall; control plane CPU etcd ([\d.]+) s, "
        r"kube-apiserver ([\d.]+) s, kube-scheduler ([\d.]+) s"
    )
    m = re.search(line, text)
    assert m and all(float(v) > 0 for v in m.groups()), text


def test_apiserver_ratio_prints_both_walls_each_components_cpu_and_the_ratio():
    from apiserver_support import require_binaries
    from shared_support import need

    require_binaries()
    need(ROOT.parent / "shared" / "bench" / "k8s_10k_jobs.json")
    text = _run("benchmarks/apiserver_ratio.py", "--jobs", "40")
    x = r"([\d.]+)"
    parts = f"etcd {x}, kube-apiserver {x}, kube-scheduler {x}"
    floor = re.search(f"floor: {x} s wall; CPU s: {parts} \\(total", text)
    bench = f"bench: {x} s wall .*CPU s: {parts}, adapter {x}, double {x} .*parity mismatches 0,"
    bench = re.search(bench, text)
    assert floor and bench and all(float(v) > 0 for v in floor.groups() + bench.groups()), text
    ratio = re.search(f"ratio bench/floor: wall {x}x, control-plane CPU {x}x", text)
    # the walls are printed to 0.1 s, the ratio from the unrounded ones: it lies within their rounding
    b, f = float(bench[1]), float(floor[1])
    assert ratio and (b - 0.05) / (f + 0.05) <= float(ratio[1]) <= (b + 0.05) / max(f - 0.05, 1e-9), text
    bound = re.search(f"CPU alone needs {x} s of wall on (\\d+) cores however its parts overlap: {x}x", text)
    assert bound and float(bound[1]) > 0 and int(bound[2]) >= 1, text  # the lower bound of the wall
    versions = r"40 jobs, Batsim double, kube-scheduler v1\.37\.2, etcd v3\.7\.0: median wall ratio"
    assert re.search(versions, text), text


def test_seed_spread_prints_the_twins_spread_over_seeds():
    text = _run("benchmarks/seed_spread.py", "--runs", "2", "--no-real")
    rows = dict(re.findall(r"^(twin 1\.37, parallelism \d+), seeds 0-1\s+.*\s(\d+)\s*$", text, re.M))
    assert rows == {"twin 1.37, parallelism 16": "2", "twin 1.37, parallelism 1": "1"}, text
    assert "(no real runs: --no-real)" in text


def test_queues_speed_runs_each_pair_with_and_without_the_kueue_twin():
    from shared_support import need

    need(ROOT.parent / "shared" / "traces" / "NASA-iPSC-1993-3.1-cln.swf")
    text = _run("benchmarks/queues_speed.py", "--jobs", "200", "--pairs", "1")
    runs = re.findall(r"wall +([\d.]+) s +adapter cpu +([\d.]+) s .* (\d+) jobs, mean wait", text)
    assert len(runs) == 2 and {n for *_, n in runs} == {"200"}, text
    assert "with the Kueue v0.17.0 twin" in text, text
    assert re.search(r"median over 1 pairs: wall [\d.]+x", text), text
