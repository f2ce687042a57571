"""One run at a time on a control plane, checked before Batsim starts.

Two runs on one control plane spoil each other: under `--sync queue` the second cannot take the
scheduler's clock (and before this check it started Batsim anyway, which then reported a deadlock), and
under the other policies the scheduler's queue and metrics mix both runs' pods. So a run holds a lease
file in the control plane's directory for its duration (run id, pid and the pid's start time, so that a
recycled pid is not taken for the run), and a run that finds a live lease, or the clock driven by a run
that holds none, stops with the reason. A lease or a clock left by a run that died is freed.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import time
import uuid
from pathlib import Path

from pydantic import BaseModel

from batkube_py.controlplane.clock import ClockError, SchedulerClock
from batkube_py.controlplane.manager import ControlPlaneError

log = logging.getLogger(__name__)


class Lease(BaseModel):
    run: str
    pid: int
    started: str  # the process's start time (/proc/PID/stat field 22): a recycled pid differs
    out: str
    since: float

    def alive(self) -> bool:
        return _start_time(self.pid) == self.started

    def describe(self) -> str:
        ago = time.time() - self.since
        return f"run {self.run} (pid {self.pid}, writing {self.out}, for {ago:.0f} s)"


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19] if fields[0] != "Z" else None


def _dir(cp_dir: Path) -> Path:
    return cp_dir / "runs"


def holders(cp_dir: Path) -> list[Lease]:
    """The live leases; those of dead runs are removed."""
    out = []
    for f in sorted(_dir(cp_dir).glob("*.json")):
        try:
            lease = Lease.model_validate_json(f.read_text())
        except (OSError, ValueError):
            continue
        if lease.alive():
            out.append(lease)
        else:
            log.info("removing the lease of %s: that process is gone", lease.describe())
            f.unlink(missing_ok=True)
    return out


def busy(cp_dir: Path, clock_address: str | None) -> str | None:
    """Why a new run may not use this control plane now, or None (ControlPlaneError if its scheduler's
    clock does not answer). A clock still driven by a run that died (no live lease names it) is given
    back to the wall clock here."""
    live = holders(cp_dir)
    if live:
        return f"{live[0].describe()} uses it"
    if clock_address is None:
        return None
    try:
        driver = SchedulerClock(clock_address, "probe", timeout=5).ready().get("run")
    except ClockError as exc:  # not busy: broken, and the run would fail at its first step
        raise ControlPlaneError(f"{exc} (`batkube controlplane status --dir {cp_dir}`)") from None
    if driver:
        log.warning("kube-scheduler's clock is still driven by run %s, which is gone: freeing it", driver)
        clock = SchedulerClock(clock_address, driver, timeout=5)
        clock.end()
    return None


def acquire(cp_dir: Path, clock_address: str | None, out: Path | None) -> tuple[str, Path]:
    """A lease for this process, unless the control plane is busy (ControlPlaneError with the reason);
    returns the run id (which also drives the scheduler's clock) and the lease file to remove at the end.
    Checked and taken under a lock, so two runs starting at once cannot both get it."""
    d = _dir(cp_dir)
    d.mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        reason = busy(cp_dir, clock_address)
        if reason:
            raise ControlPlaneError(
                f"the control plane in {cp_dir} is busy: {reason}; wait for it to end, use another "
                "(--controlplane-dir), or ask for a private one (--private-controlplane)"
            )
        run, pid, now = uuid.uuid4().hex[:12], os.getpid(), time.time()
        lease = Lease(run=run, pid=pid, started=_start_time(pid) or "?", out=str(out or "-"), since=now)
        path = d / f"{run}.json"
        path.write_text(json.dumps(lease.model_dump()))
    return run, path
