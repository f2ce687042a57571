"""The parity suite's cases: small clusters and workloads that exercise one scheduling feature each under
contention (bursts of simultaneous submissions and completions), generated from a seed."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

SPREAD_CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]
  plugins:
    score:
      enabled: [{name: NodeResourcesBalancedAllocation, weight: 5}]
"""

TWO_PROFILES = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: packer
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 1}]
"""


# NodeAffinity's score, weighted far above the others, ranks the nodes by their `rank` label: the best
# node is always unique, so both backends must produce the same schedule, job by job
TERM = "{key: rank, operator: In, values: ['%d']}"
RANKED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled: [{name: NodeAffinity, weight: 20}]
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
""" + "".join(
    f"        - {{weight: {10 * r}, preference: {{matchExpressions: [{TERM % r}]}}}}\n" for r in range(1, 6)
)


def ranked(cores: list[str], **extra: str) -> list[tuple[int, dict[str, str]]]:
    return [(1, {"core": c, "rank": str(r + 1), **extra}) for r, c in enumerate(cores)]


@dataclass
class Case:
    name: str
    groups: list[tuple[int, dict[str, str]]]  # (hosts, properties of each)
    jobs: list[dict]
    config: str | None = None
    events: list[dict] = field(default_factory=list)
    platform_xml: str | None = None  # instead of one <cluster> per group (e.g. `batkube platform --racks`)

    def write(self, d: Path) -> tuple[Path, Path, Path | None, Path | None]:
        d.mkdir(parents=True, exist_ok=True)
        (d / "p.xml").write_text(self.platform_xml or platform(self.groups))
        profiles = {}
        jobs = []
        for j in self.jobs:
            key = f"d{j['delay']}"
            profiles[key] = {"type": "delay", "delay": float(key[1:])}
            jobs.append({"res": 1, **{k: v for k, v in j.items() if k != "delay"}, "profile": key})
        nb = sum(n for n, _ in self.groups)
        (d / "w.json").write_text(json.dumps({"nb_res": nb, "jobs": jobs, "profiles": profiles}))
        cfg = ev = None
        if self.config:
            cfg = d / "sched.yaml"
            cfg.write_text(self.config)
        if self.events:
            ev = d / "events.txt"
            ev.write_text("".join(json.dumps(e) + "\n" for e in self.events))
        return d / "p.xml", d / "w.json", cfg, ev


def platform(groups: list[tuple[int, dict[str, str]]]) -> str:
    link = 'bw="125MBps" lat="50us" bb_bw="2.25GBps" bb_lat="500us"'
    parts, routes = [], []
    for g, (n, props) in enumerate(groups):
        prop_xml = "".join(f"\n    <prop id={quoteattr(k)} value={quoteattr(v)}/>" for k, v in props.items())
        parts.append(
            f'<cluster id="g{g}" prefix="g{g}-" suffix="" radical="0-{n - 1}" speed="1Gf" {link}>'
            f"{prop_xml}\n</cluster>"
        )
        routes.append(
            f'<zoneRoute src="g{g}" dst="master" gw_src="g{g}-g{g}_router" '
            'gw_dst="master_hostmaster_router"><link_ctn id="backbone"/></zoneRoute>'
        )
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
{chr(10).join(parts)}
<cluster id="master" prefix="master_host" suffix="" radical="0-0" speed="1Gf" {link}>
    <prop id="role" value="master"/>
</cluster>
<link id="backbone" bandwidth="1.25GBps" latency="500us"/>
{chr(10).join(routes)}
</zone>
</platform>
"""


def _jobs(seed: int, n: int, make) -> list[dict]:
    """n jobs in a few bursts (several submitted at the same second), each shaped by make(rng, i)."""
    rng = random.Random(seed)
    out, t = [], 0
    for i in range(n):
        if rng.random() < 0.3:
            t += rng.choice((1, 3, 7, 20))
        out.append({"id": f"j{i}", "subtime": t, "delay": rng.choice((5, 10, 30, 60)), **make(rng, i)})
    return out


def _cpu(rng) -> dict:
    return {"cpu": rng.choice(("500m", "1", "1500m", "2"))}


TOLERATE = {
    "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
}
TIER_GT_2 = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["2"]}]}]
        }
    }
}
PREFER_TIER_1 = {
    "nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 30,
                "preference": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["1"]}]},
            }
        ]
    }
}
NEAR_DB = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 50,
                "podAffinityTerm": {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}},
            }
        ]
    }
}
ALONE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "solo"}}}
        ]
    }
}


def _spread(rng) -> list[dict]:
    when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
    return [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]


def _maybe(rng, p: float, fields: dict) -> dict:
    return fields if rng.random() < p else {}


def cases() -> list[Case]:
    hetero = [
        (2, {"core": "2", "memory": "4Gi"}),
        (2, {"core": "4", "memory": "8Gi"}),
        (1, {"core": "6", "memory": "6Gi"}),
    ]
    zones = [
        (2, {"core": "2", "zone": "a"}),
        (2, {"core": "2", "zone": "b"}),
        (1, {"core": "4", "zone": "c"}),
    ]
    taints = [
        (2, {"core": "2", "taints": "dedicated=gpu:NoSchedule"}),
        (2, {"core": "2", "taints": "soft=yes:PreferNoSchedule"}),
        (1, {"core": "3"}),
    ]
    tiers = [
        (2, {"core": "2", "tier": "1"}),
        (2, {"core": "3", "tier": "5"}),
        (1, {"core": "4", "tier": "12"}),
    ]
    gpus = [(2, {"core": "4", "nvidia.com/gpu": "2"}), (3, {"core": "4"})]
    node_rules = [{"nodeSelector": {"tier": "5"}}, {"affinity": TIER_GT_2}, {"affinity": PREFER_TIER_1}, {}]
    failures = [
        {"timestamp": 12, "type": "machine_unavailable", "resources": "1"},
        {"timestamp": 40, "type": "machine_unavailable", "resources": "3-4"},
        {"timestamp": 70, "type": "machine_available", "resources": "1 3-4"},
    ]
    return [
        Case(
            "resources", hetero, _jobs(1, 40, lambda r, i: {**_cpu(r), "memory": r.choice(("512Mi", "2Gi"))})
        ),
        Case(
            "most-allocated-balanced",
            hetero,
            _jobs(2, 40, lambda r, i: {**_cpu(r), "memory": r.choice(("256Mi", "3Gi"))}),
            config=SPREAD_CONFIG,
        ),
        Case("taints", taints, _jobs(3, 40, lambda r, i: {**_cpu(r), **_maybe(r, 0.5, TOLERATE)})),
        Case("node-selector-affinity", tiers, _jobs(4, 40, lambda r, i: {**_cpu(r), **r.choice(node_rules)})),
        Case(
            "topology-spread",
            zones,
            _jobs(
                5,
                40,
                lambda r, i: {**_cpu(r), "labels": {"app": "web"}, "topologySpreadConstraints": _spread(r)},
            ),
        ),
        Case(
            "inter-pod-affinity",
            zones,
            _jobs(
                6,
                40,
                lambda r, i: {
                    **_cpu(r),
                    "labels": {"app": r.choice(("db", "web"))},
                    **_maybe(r, 0.5, {"affinity": NEAR_DB}),
                },
            ),
        ),
        Case(
            "pod-anti-affinity",
            [(6, {"core": "2"})],
            _jobs(7, 50, lambda r, i: {"cpu": "500m", "labels": {"app": "solo"}, "affinity": ALONE}),
        ),
        Case(
            "extended-resources",
            gpus,
            _jobs(
                8,
                40,
                lambda r, i: {
                    **_cpu(r),
                    **_maybe(r, 0.4, {"extendedResources": {"nvidia.com/gpu": str(r.choice((1, 2)))}}),
                },
            ),
        ),
        Case(
            "priorities-preemption",
            [(4, {"core": "2"})],
            _jobs(9, 40, lambda r, i: {**_cpu(r), "priority": r.choice((0, 0, 10, 100))}),
        ),
        Case("node-failures", [(5, {"core": "2"})], _jobs(10, 40, lambda r, i: _cpu(r)), events=failures),
        Case(
            "two-profiles",
            hetero,
            _jobs(11, 40, lambda r, i: {**_cpu(r), "scheduler": r.choice(("default-scheduler", "packer"))}),
            config=TWO_PROFILES,
        ),
        Case(
            "spaced-backoff",
            [(4, {"core": "1"})],
            [{"id": f"j{i}", "subtime": 3 * i, "delay": 13 + (i % 3), "cpu": "1"} for i in range(40)],
        ),
        Case(
            "memory-pressure",
            [(3, {"core": "8", "memory": "4Gi"})],
            _jobs(12, 40, lambda r, i: {"cpu": "100m", "memory": r.choice(("1Gi", "1536Mi", "3Gi"))}),
        ),
        Case("ranked-spaced", ranked(["1", "1", "1", "1"]), RANKED_SPACED, config=RANKED),
        Case(
            "ranked-preemption",
            ranked(["2", "2", "2", "2"]),
            _jobs(13, 40, lambda r, i: {**_cpu(r), "priority": r.choice((0, 0, 10, 100))}),
            config=RANKED,
        ),
        Case(
            "ranked-node-failures",
            ranked(["2", "2", "3", "2", "2"]),
            _jobs(14, 40, lambda r, i: _cpu(r)),
            config=RANKED,
            events=failures,
        ),
        *queue_cases(),
        *zoned_cases(),
        Case(
            "ranked-memory",
            ranked(["4", "4", "4"], memory="4Gi"),
            _jobs(15, 40, lambda r, i: {"cpu": "500m", "memory": r.choice(("1Gi", "1536Mi", "3Gi"))}),
            config=RANKED,
        ),
    ]


def _gated(seed: int, jobs: list[dict], p: float, after=(3, 8, 20, 45, 90)) -> list[dict]:
    """Some jobs' pods held behind a scheduling gate until a later simulated time (gatedUntil); a group's
    members released at different times (one gate per pod), the first often at once."""
    rng = random.Random(seed)
    for j in jobs:
        if rng.random() >= p:
            continue
        if j.get("res", 1) > 1:
            j["gatedUntil"] = [j["subtime"] + rng.choice((0, *after)) for _ in range(j["res"])]
        else:
            j["gatedUntil"] = j["subtime"] + rng.choice(after)
    return jobs


def queue_cases() -> list[Case]:
    """Cases whose outcome lives in the scheduling queue (issue 25): scheduling gates lifted at simulated
    times, and pods parked past podMaxInUnschedulablePodsDuration (5 min), where the 30-s leftover flush
    retries them and refreshes their queue timestamps (so their order against later pods changes)."""
    long_gates = [{"id": f"late{i}", "subtime": 2 + i, "delay": 20, "cpu": "1", "gatedUntil": 400 + 37 * i}
                  for i in range(3)]  # fmt: skip
    # host 2 (rank 3) is down from 10 s to 700 s; pods pinned to it are rejected by NodeUnschedulable and
    # NodeAffinity, whose events (a node's taint or labels changing) never come while it is down, and the
    # completions elsewhere do not move them: they stay parked until the leftover flush retries them (the
    # first pinned pod at 330 and 660, the second at 360 and 690, the third, parked at 400, never), which
    # refreshes their queue timestamps: when the node returns, the third goes first
    down = [{"timestamp": 10, "type": "machine_unavailable", "resources": "2"},
            {"timestamp": 700, "type": "machine_available", "resources": "2"}]  # fmt: skip
    pinned = [{"id": f"pin{i}", "subtime": t, "delay": 30, "cpu": "2", "nodeSelector": {"rank": "3"}}
              for i, t in enumerate((20, 50, 400))]  # fmt: skip
    rng = random.Random(31)
    small = [{"id": f"s{i}", "subtime": 12 + 10 * i, "delay": rng.choice((40, 70, 110)),
              "cpu": rng.choice(("1", "2"))} for i in range(60)]  # fmt: skip
    parked = pinned + _gated(42, small, 0.1, after=(5, 20, 340)) + long_gates
    return [
        Case(
            "scheduling-gates",
            ranked(["2", "2", "2", "2"]),
            _gated(41, _jobs(16, 40, lambda r, i: _cpu(r)), 0.5) + long_gates,
            config=RANKED,
        ),
        Case("parked-past-max", ranked(["2", "2", "2"]), parked, config=RANKED, events=down),
    ]


RANKED_SPACED = [{"id": f"j{i}", "subtime": 2 * i, "delay": 7 + (i % 4), "cpu": "1"} for i in range(40)]


# Under --sync queue the real scheduler backs off on the simulated clock as configured (upstream's 1 s
# doubling to 10 s here), as the twin does; a group waits in the error backoff heap for up to
# podMaxBackoffSeconds * sqrt(size), never parked. The nodes are ranked (RANKED), so no placement ties and
# both backends must give the same schedule, job by job.
GANG_CONFIG = RANKED


def _gang(rng, sizes=(2, 3, 4), p: float = 0.5, **extra) -> dict:
    """A job of several pods (a gang) with probability p, else one pod."""
    if rng.random() >= p:
        return {}
    return {"res": rng.choice(sizes), **_maybe(rng, 0.5, {"onePodPerNode": True}), **extra}


def gang_cases() -> list[Case]:
    """Multi-host jobs as pod groups (kube-scheduler 1.37.2, GenericWorkload on): the real group cycle
    against the twin's. Every case mixes groups with single pods."""
    # the first failure hits a running group's member (job j5 on host 3): the whole job is killed
    failures = [
        {"timestamp": 10, "type": "machine_unavailable", "resources": "3"},
        {"timestamp": 41, "type": "machine_unavailable", "resources": "4"},
        {"timestamp": 70, "type": "machine_available", "resources": "3 4"},
    ]
    # three zones of different capacity: NodeResourcesFit.ScorePlacement (MostAllocated over the zone)
    # tells them apart, so a group's zone is rarely a tie
    zones = [(1, {"core": c, "rank": str(r + 1), "zone": z}) for r, (c, z) in enumerate(
        [("2", "a"), ("2", "a"), ("3", "b"), ("3", "b"), ("5", "c")])]  # fmt: skip
    return [
        Case(
            "gang-mixed",
            ranked(["2"] * 4),
            _jobs(21, 30, lambda r, i: {**_cpu(r), **_gang(r)}),
            config=GANG_CONFIG,
        ),  # fmt: skip
        # the cluster busy with single pods when each group arrives: it fits only after completions
        Case(
            "gang-after-completions",
            ranked(["2"] * 4),
            [{"id": f"s{i}", "subtime": 0, "delay": 20 + 5 * i, "cpu": "2"} for i in range(4)]
            + [
                {
                    "id": f"g{i}",
                    "subtime": 1 + i,
                    "delay": 15,
                    "cpu": "1",
                    "res": 3 + i % 2,
                    **({"onePodPerNode": True} if i % 2 else {}),
                }
                for i in range(4)
            ],
            config=GANG_CONFIG,
        ),  # fmt: skip
        # one group the cluster can never hold (rejected on submission) among others that run
        Case(
            "gang-never-fits",
            ranked(["2"] * 3),
            [{"id": "big", "subtime": 0, "delay": 10, "cpu": "1", "res": 4, "onePodPerNode": True}]
            + _jobs(22, 20, lambda r, i: {"cpu": "1", **_gang(r, sizes=(2, 3))}),
            config=GANG_CONFIG,
        ),
        Case(
            "gang-topology",
            zones,
            _jobs(23, 30, lambda r, i: {**_cpu(r), **_gang(r, sizes=(2, 3), groupTopology="zone")}),
            config=GANG_CONFIG,
        ),
        Case(
            "gang-preemption",
            ranked(["2"] * 4),
            _jobs(24, 30, lambda r, i: {**_cpu(r), "priority": r.choice((0, 0, 10, 100)), **_gang(r)}),
            config=GANG_CONFIG,
        ),
        # members of a group released at different times: the group is tried once its last gate is lifted
        Case(
            "gang-quorum-late",
            ranked(["2"] * 4),
            _gated(43, _jobs(26, 30, lambda r, i: {**_cpu(r), **_gang(r, p=0.6)}), 0.7),
            config=GANG_CONFIG,
        ),
        Case(
            "gang-node-failures",
            ranked(["2"] * 5),
            _jobs(25, 30, lambda r, i: {**_cpu(r), **_gang(r)}),
            config=GANG_CONFIG,
            events=failures,
        ),
    ]


RACK = "topology.kubernetes.io/zone"


def _racks(racks: int, nodes: int, cores: str) -> tuple[list[tuple[int, dict[str, str]]], str]:
    """`batkube platform --racks RACKS --nodes NODES --cores CORES`: nodes labelled with their rack as
    topology.kubernetes.io/zone, listed rack by rack; kube-scheduler's node tree interleaves them."""
    from batkube_py.inputs.platforms import rack_platform

    per = nodes // racks
    groups = [(per, {"core": cores, RACK: f"rack{r}"}) for r in range(racks)]
    return groups, rack_platform(racks, nodes, cores)


def _zone_spread(rng) -> list[dict]:
    web = {"matchLabels": {"app": "web"}}
    when = rng.choice(("DoNotSchedule", "ScheduleAnyway"))
    out = [{"maxSkew": 1, "topologyKey": RACK, "whenUnsatisfiable": when, "labelSelector": web}]
    if rng.random() < 0.3:
        soft = {"whenUnsatisfiable": "ScheduleAnyway", "labelSelector": web}
        out.append({"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", **soft})
    return out


DB = {"app": "db"}
NEAR_DB_RACK = {
    "podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 50, "podAffinityTerm": {"topologyKey": RACK, "labelSelector": {"matchLabels": DB}}}
        ]
    }
}
AWAY_FROM_CACHE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchLabels": {"app": "cache"}}},
            {"topologyKey": RACK, "labelSelector": {"matchLabels": {"app": "db"}}},
        ]
    }
}


def _rack_affinity(rng) -> dict:
    app = rng.choice(("db", "web", "cache"))
    if app == "web":
        return {"labels": {"app": app}, **_maybe(rng, 0.7, {"affinity": NEAR_DB_RACK})}
    if app == "cache":
        return {"labels": {"app": app}, **_maybe(rng, 0.5, {"affinity": AWAY_FROM_CACHE})}
    return {"labels": {"app": app}}


def _pinned_preemptor(rng, nodes: int) -> dict:
    """Priority 100 pinned to one node (its only potential node: no preemption tie to break at random),
    or priority 0 anywhere."""
    if rng.random() < 0.25:
        return {"priority": 100, "nodeSelector": {"kubernetes.io/hostname": f"node-{rng.randrange(nodes)}"}}
    return {"priority": 0}


def zoned_cases() -> list[Case]:
    """Issue 36, `parallelism: 1` against kube-scheduler 1.37.2: nodes in racks (zones), where the node
    tree's zone-by-zone order decides every score tie; spread over the racks, pod affinity to a rack
    and anti-affinity, and preemption whose victims tie in importance. Both must give the same pods.csv."""
    groups, xml = _racks(3, 9, "2")
    big_groups, big_xml = _racks(4, 8, "4")
    # 12 nodes: Batsim lists hosts by name (node-0, node-1, node-10, node-11, node-2, ...), so the
    # nodes are created, and their racks first met, in that order
    named_groups, named_xml = _racks(4, 12, "2")
    return [
        Case("racks-ties", groups, _jobs(31, 40, lambda r, i: _cpu(r)), platform_xml=xml),
        Case(
            "racks-spread",
            groups,
            _jobs(32, 40, lambda r, i: {**_cpu(r), "labels": {"app": "web"},
                                        "topologySpreadConstraints": _zone_spread(r)}),  # fmt: skip
            platform_xml=xml,
        ),
        Case("racks-affinity", groups, _jobs(33, 40, lambda r, i: {**_cpu(r), **_rack_affinity(r)}),
             platform_xml=xml),  # fmt: skip
        Case(
            "racks-preemption",
            big_groups,
            _jobs(34, 40, lambda r, i: {"cpu": r.choice(("500m", "1", "2")), **_pinned_preemptor(r, 8)}),
            platform_xml=big_xml,
        ),
        Case("racks-mixed-12", named_groups, _jobs(35, 60, lambda r, i: _mixed(r)), platform_xml=named_xml),
    ]


def _mixed(rng) -> dict:
    """Spread over the racks, affinity to a rack or plain, with the sizes of _cpu."""
    job, kind = _cpu(rng), rng.random()
    if kind < 0.3:
        return {**job, "labels": {"app": "web"}, "topologySpreadConstraints": _zone_spread(rng)}
    return {**job, **_rack_affinity(rng)} if kind < 0.6 else job
