"""The thesis's synthetic workloads, regenerated rather than copied: burst and spaced delay jobs, and
the same as gangs: jobs of several pods each (res > 1, a pod group; docs/gangs.md)."""

from __future__ import annotations

from typing import Any

from batkube_py import quantities


def delay_jobs(
    jobs: int, delay: float, interval: float, *, cpu: str | None = "1", memory: str | None = None,
    walltime: float | None = 1000, scheduler: str = "default", pods: int = 1, one_pod_per_node: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """`jobs` identical delay jobs, one every `interval` seconds (0: all at once, a burst), each of
    `pods` pods (a pod group when more than one)."""
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if pods < 1:
        raise ValueError(f"--pods-per-job must be at least 1, got {pods}")
    if one_pod_per_node and pods == 1:
        raise ValueError("--one-pod-per-node needs --pods-per-job above 1")
    if delay <= 0 or interval < 0:
        raise ValueError("--delay must be > 0 and --interval >= 0")
    checks = (("--cpu", cpu, quantities.milli_cpu), ("--memory", memory, quantities.byte_count))
    for option, value, check in checks:
        if value is not None:
            try:
                check(value)
            except quantities.QuantityError as exc:
                raise ValueError(f"{option}: {exc}") from None
    profile: dict[str, Any] = {"type": "delay", "delay": delay, "scheduler": scheduler}
    if cpu is not None:
        profile["cpu"] = cpu
    if memory is not None:
        profile["memory"] = memory
    if one_pod_per_node:
        profile["onePodPerNode"] = True
    job_list = []
    for i in range(jobs):
        job: dict[str, Any] = {"id": str(i + 1), "subtime": round(i * interval, 6)}
        if walltime is not None:
            job["walltime"] = walltime
        job.update(res=pods, profile="delay")
        job_list.append(job)
    return {"nb_res": pods, "jobs": job_list, "profiles": {"delay": profile}}
