"""Communicating gang workloads: jobs on several hosts running parallel_homogeneous profiles, so where a
group lands (one rack or across the backbone) decides how long it runs (issue 27's experiment).

Three shapes of the same jobs (same arrivals, sizes, flops and bytes, from one seed):
- `gang`: res = R pods, one per node (each asks the whole node), a parallel_homogeneous profile;
- `topology`: the same, with `groupTopology: KEY` so the group stays in one value of that node label;
- `flat`: the thesis's flattening, one pod asking R nodes' cores running a delay profile that lasts what
  the ptask lasts alone inside one rack of `batkube platform --racks` (the Batsim double's ptask model on a
  generated rack of max-res nodes, or on the first hosts of --platform).
"""

from __future__ import annotations

import os
import random
from typing import Any

SHAPES = ("gang", "topology", "flat")
_PLATFORMS: dict[str, Any] = {}
FLOPS = (2e9, 5e9, 10e9, 20e9)
BYTES = (1e7, 1e8, 5e8)


def alone(platform_file: str, res: int, cpu: float, com: float) -> float:
    """How long the ptask lasts alone on the platform's first `res` hosts: its delay twin."""
    from batkube_py.batsim_double.simplatform import Platform

    if platform_file not in _PLATFORMS:
        _PLATFORMS[platform_file] = Platform(platform_file)
    platform = _PLATFORMS[platform_file]
    compute = [h for h in platform.hosts.values() if h.props.get("role") != "master"]
    if res > len(compute):
        raise ValueError(f"--max-res {res} exceeds the platform's {len(compute)} compute hosts")
    return alone_on(platform, compute[:res], cpu, com)


def alone_on(platform, hosts: list, cpu: float, com: float) -> float:
    """How long a parallel_homogeneous ptask lasts alone on these hosts of a double's Platform."""
    from batkube_py.batsim_double.sharing import Model
    from batkube_py.batsim_double.tasks import matrices, ptask_action

    prof = {"type": "parallel_homogeneous", "cpu": cpu, "com": com}
    model = Model(platform.surf_precision, platform.maxmin_precision)
    model.add(ptask_action(platform, hosts, *matrices(prof, len(hosts), "p")))
    now = 0.0
    while model.started:
        delta = model.next_event()
        now += delta
        model.update(delta)
    return now




def _one_rack(nodes: int, cores: int) -> str:
    import tempfile

    from batkube_py.inputs.platforms import rack_platform

    with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
        f.write(rack_platform(1, nodes, str(cores)))
    return f.name


def comm_jobs(
    jobs: int, interval: float, min_res: int, max_res: int, cores: int, seed: int, shape: str,
    topology: str | None = None, platform: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """`jobs` jobs of min_res..max_res hosts, Poisson arrivals `interval` s apart on average."""
    if shape not in SHAPES:
        raise ValueError(f"--shape: expected one of {', '.join(SHAPES)}, got {shape!r}")
    if not 1 <= min_res <= max_res:
        raise ValueError(f"--min-res/--max-res: expected 1 <= min <= max, got {min_res}, {max_res}")
    if shape == "topology" and not topology:
        raise ValueError("--shape topology needs --group-topology KEY")
    generated = shape == "flat" and platform is None
    if generated:
        platform = _one_rack(max_res, cores)
    if interval <= 0 or cores < 1:
        raise ValueError("--interval must be > 0 and --cores >= 1")
    rng = random.Random(seed)
    out, profiles, t = [], {}, 0.0
    for i in range(jobs):
        t += rng.expovariate(1 / interval)
        res, cpu, com = rng.randint(min_res, max_res), rng.choice(FLOPS), rng.choice(BYTES)
        name = f"p{res}-{cpu:g}-{com:g}"
        job: dict[str, Any] = {"id": str(i), "subtime": round(t, 3), "res": res, "profile": name}
        if shape == "flat":
            job["res"] = 1
            profiles.setdefault(name, {"type": "delay", "delay": round(alone(platform, res, cpu, com), 6),
                                       "cpu": str(res * cores)})  # fmt: skip
        else:
            profiles.setdefault(name, {"type": "parallel_homogeneous", "cpu": cpu, "com": com,
                                       "cpu_req": str(cores), "onePodPerNode": True})  # fmt: skip
            if shape == "topology":
                profiles[name]["groupTopology"] = topology
        job["walltime"] = 1e7
        out.append(job)
    if generated:
        os.unlink(platform)
        _PLATFORMS.pop(platform, None)
    return {"nb_res": 1, "jobs": out, "profiles": profiles}
