"""The double's ptask durations against SimGrid 3.32's L07 model worked out by hand from the platform numbers.

Platform: two racks (SimGrid <cluster>s) of 4 hosts, 1 Gflop/s per core, 4 cores, host links 1.25 GB/s and
50 us (split duplex), a 2.5 GB/s / 5 us backbone per rack, a 10 GB/s / 1 us loopback per host, and the racks
joined by a 0.125 GB/s / 500 us link. A ptask's rate (its fraction of work per second) is bounded by one core
per executor (speed / flops), and FairBottleneck gives every variable on a constraint the same share of its
capacity, divided by the variable's weight there (its flops on a CPU, the bytes of every pair it routes over a
link, the largest pair only on a FATPIPE loopback). It starts after its longest route's latency.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from batkube_py.batsim_double.sharing import Model
from batkube_py.batsim_double.simplatform import Platform
from batkube_py.batsim_double.tasks import matrices, ptask_action

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
  <cluster id="rack0" prefix="node-" suffix="" radical="0-3" speed="1Gf" core="4" bw="1.25GBps" lat="50us"
           bb_bw="2.5GBps" bb_lat="5us" loopback_bw="10GBps" loopback_lat="1us"/>
  <cluster id="rack1" prefix="node-" suffix="" radical="4-7" speed="1Gf" core="4" bw="1.25GBps" lat="50us"
           bb_bw="2.5GBps" bb_lat="5us" loopback_bw="10GBps" loopback_lat="1us"/>
  <link id="backbone" bandwidth="0.125GBps" latency="500us"/>
  <zoneRoute src="rack0" dst="rack1" gw_src="node-rack0_router" gw_dst="node-rack1_router">
    <link_ctn id="backbone"/></zoneRoute>
</zone>
</platform>
"""
PH_BIG = {"type": "parallel_homogeneous", "cpu": 5e9, "com": 1e9}


@pytest.fixture()
def platform(tmp_path: Path) -> Platform:
    path = tmp_path / "tworacks.xml"
    path.write_text(PLATFORM)
    return Platform(str(path))


def run(platform: Platform, jobs: list[tuple[dict, list[str]]]) -> list[float]:
    """Start every ptask at time 0 and return when each one ends."""
    model = Model(platform.surf_precision, platform.maxmin_precision)
    now, ends = 0.0, [0.0] * len(jobs)
    actions = []
    for i, (prof, names) in enumerate(jobs):
        cpu, com = matrices(prof, len(names), "p")
        action = ptask_action(platform, [platform.hosts[n] for n in names], cpu, com)
        action.post = lambda i=i: ends.__setitem__(i, now)
        actions.append(model.add(action))
    while model.started:
        delta = model.next_event()
        assert delta >= 0
        now += delta
        model.update(delta)
        while model.finished:
            model.finished.popleft().post()
    return ends


def test_routes_follow_simgrid(platform: Platform) -> None:
    assert [link.name for link in platform.route("node-0", "node-0")[0]] == ["rack0_link_0_loopback"]
    assert [link.name for link in platform.route("node-0", "node-1")[0]] == [
        "rack0_link_0_UP",
        "rack0_backbone",
        "rack0_link_1_DOWN",
    ]
    links, lat = platform.route("node-0", "node-4")
    assert [link.name for link in links] == [
        "rack0_link_0_UP",
        "rack0_backbone",
        "backbone",
        "rack1_backbone",
        "rack1_link_4_DOWN",
    ]
    assert lat == pytest.approx(610e-6, abs=1e-15)


def test_single_host_two_executors_share_the_cpu_and_the_loopback(platform: Platform) -> None:
    # two CPU elements of 2e9 on a 4e9 host: share 2e9 each -> 1.0; one core per executor: 1e9/2e9 = 0.5;
    # loopback (FATPIPE) carries max(2e8, 2e8): 1e10/2e8 = 50. Rate 0.5 after the loopback's 1 us.
    (end,) = run(platform, [({"type": "parallel_homogeneous", "cpu": 2e9, "com": 2e8}, ["node-0", "node-0"])])
    assert end == pytest.approx(1e-6 + 1 / 0.5, abs=1e-9)


def test_same_rack(platform: Platform) -> None:
    # per host 5e9 flops: core bound 0.2; each link up carries 3 pairs (3e9): 1.25e9/3e9; the rack backbone
    # carries the 12 pairs (12e9): 2.5e9/12e9 = 0.2083. Rate 0.2 after 50 + 5 + 50 us.
    (end,) = run(platform, [(PH_BIG, ["node-0", "node-1", "node-2", "node-3"])])
    assert end == pytest.approx(105e-6 + 1 / 0.2, abs=1e-9)


def test_cross_rack(platform: Platform) -> None:
    # two hosts per rack: the 8 cross-rack pairs (8e9 bytes) share the 0.125 GB/s link: 1/64 per second,
    # after the 610 us route.
    (end,) = run(platform, [(PH_BIG, ["node-0", "node-2", "node-4", "node-6"])])
    assert end == pytest.approx(610e-6 + 64.0, abs=1e-9)


def test_cross_rack_jobs_contend_for_the_link(platform: Platform) -> None:
    # two such jobs: each gets half of the link's capacity, 0.0625e9 / 8e9 per second.
    ends = run(
        platform,
        [
            (PH_BIG, ["node-0", "node-2", "node-4", "node-6"]),
            (PH_BIG, ["node-1", "node-3", "node-5", "node-7"]),
        ],
    )
    assert ends == [pytest.approx(610e-6 + 128.0, abs=1e-9)] * 2


def test_compute_sharing_on_one_host(platform: Platform) -> None:
    # two single-executor jobs of 4e9 flops on a 4-core host: each bounded by one core (1e9/4e9 = 0.25),
    # the host's 4e9 split in two shares well above it: 4 s each, no latency (no communication).
    prof = {"type": "parallel_homogeneous", "cpu": 4e9, "com": 0}
    assert run(platform, [(prof, ["node-0"]), (prof, ["node-0"])]) == [4.0, 4.0]


def test_total_amount_is_spread(platform: Platform) -> None:
    # parallel_homogeneous_total: 8e9 flops and 4e9 bytes over 2 hosts of one rack -> 4e9 flops each (0.25),
    # 2e9 per pair: the backbone's 2 pairs 4e9 -> 0.625, links 1.25e9/2e9 = 0.625. Rate 0.25.
    (end,) = run(
        platform, [({"type": "parallel_homogeneous_total", "cpu": 8e9, "com": 4e9}, ["node-0", "node-1"])]
    )
    assert end == pytest.approx(105e-6 + 4.0, abs=1e-9)
