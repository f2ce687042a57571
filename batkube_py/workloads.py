"""The thesis's synthetic workloads, regenerated rather than copied: burst and spaced delay jobs."""

from __future__ import annotations

from typing import Any

from batkube_py import quantities


def delay_jobs(
    jobs: int, delay: float, interval: float, *, cpu: str | None = "1", memory: str | None = None,
    walltime: float | None = 1000, scheduler: str = "default",
) -> dict[str, Any]:  # fmt: skip
    """`jobs` identical delay jobs, one every `interval` seconds (0: all at once, a burst)."""
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
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
    job_list = []
    for i in range(jobs):
        job: dict[str, Any] = {"id": str(i + 1), "subtime": round(i * interval, 6)}
        if walltime is not None:
            job["walltime"] = walltime
        job.update(res=1, profile="delay")
        job_list.append(job)
    return {"nb_res": 1, "jobs": job_list, "profiles": {"delay": profile}}
