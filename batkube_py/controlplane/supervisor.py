"""`batkube controlplane up` keeps its processes running: a detached supervisor restarts any that exits.

Every component of manager.COMPONENTS is watched the same way (a new one, e.g. a Kueue controller, is
supervised once it is listed there): a component that exited is started again with the same flags, ports
and data, after a backoff of 1 s doubling to 30 s while its restarts keep failing (reset once it has run
for a minute); its previous log is kept as NAME.log.K and every restart is logged in supervisor.log and
counted in `controlplane status`. A component stopped on purpose (`ControlPlane.stop`) or paused
(SIGSTOP) is left alone. A run in progress does not survive every restart (docs/faults.md): a restarted
kube-apiserver loses nothing, a restarted kube-scheduler has lost its queue, and the run says so.

    python -m batkube_py.controlplane.supervisor DIR
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import batkube_py
from batkube_py.controlplane.manager import COMPONENTS, ControlPlane, ControlPlaneError, _alive

log = logging.getLogger("batkube_py.controlplane.supervisor")

POLL = 0.2
FIRST_BACKOFF, MAX_BACKOFF, HEALTHY = 1.0, 30.0, 60.0


def proc_state(pid: int) -> str | None:
    """R, S, D, T (stopped), Z (zombie)... or None if there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def diagnose(cp: ControlPlane) -> str:
    """The components that are not serving, as a run's last line names them ("etcd: stopped (SIGSTOP)");
    "" when all run."""
    st = cp.state()
    if st is None:
        return f"no control plane state in {cp.dir}"
    supervised = bool(st.supervisor and _alive(st.supervisor, str(cp.dir)))
    out = []
    for name in COMPONENTS:
        state = proc_state(st.pids[name]) if name in st.pids else None
        if state is None or state == "Z":
            out.append(f"{name}: exited" + ("" if supervised else " (no supervisor restarts it)"))
        elif state in "Tt":
            out.append(f"{name}: stopped (SIGSTOP)")
    return ", ".join(out)


class Supervisor:
    def __init__(self, cp: ControlPlane):
        self.cp = cp
        self.backoff = dict.fromkeys(COMPONENTS, FIRST_BACKOFF)
        self.next_try = dict.fromkeys(COMPONENTS, 0.0)
        self.up_since = dict.fromkeys(COMPONENTS, time.monotonic())
        self.stopping = False

    def step(self) -> bool:
        """One look at every component; False once the control plane is gone (`down` removed it)."""
        st = self.cp.state()
        if st is None:
            return False
        now = time.monotonic()
        for name in COMPONENTS:
            if name not in st.pids or name in st.held:
                continue
            if self.cp._is_alive(st.pids[name]):
                if now - self.up_since[name] > HEALTHY:
                    self.backoff[name] = FIRST_BACKOFF
                continue
            if now < self.next_try[name] or self.stopping:
                continue
            proc = self.cp._procs.pop(st.pids[name], None)
            code = f" with code {proc.returncode}" if proc is not None else ""
            log.warning("%s (pid %d) exited%s: restarting it", name, st.pids[name], code)
            try:
                self.cp.start(name, st)
            except ControlPlaneError as exc:
                self.next_try[name] = time.monotonic() + self.backoff[name]
                log.error("restart of %s failed (%s); next try in %.0f s", name, str(exc).splitlines()[0],
                          self.backoff[name])  # fmt: skip
                self.backoff[name] = min(self.backoff[name] * 2, MAX_BACKOFF)
                continue
            log.warning("%s restarted (pid %d); its previous log is %s.log.%d", name, st.pids[name], name,
                        st.starts[name] - 1)  # fmt: skip
            self.up_since[name] = time.monotonic()
            self.next_try[name] = time.monotonic() + self.backoff[name]
        return True

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._stop)
        while not self.stopping and self.step():
            time.sleep(POLL)
        log.info("supervisor stops (the components keep running until `controlplane down`)")

    def _stop(self, *_: object) -> None:
        self.stopping = True


def spawn(cp: ControlPlane) -> int:
    """Start the supervisor of a control plane `up` started, detached, importing this very batkube_py;
    its pid goes to the state file (and `down` stops it first)."""
    st = cp.state()
    assert st is not None
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(batkube_py.__file__).parents[1]),
                                                         os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    with open(cp.dir / "supervisor.log", "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "batkube_py.controlplane.supervisor", str(cp.dir)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            cwd=cp.dir, env=env,
        )  # fmt: skip
    cp._edit(st, lambda s: setattr(s, "supervisor", proc.pid))
    return proc.pid


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if len(argv) != 1:
        print("usage: python -m batkube_py.controlplane.supervisor DIR", file=sys.stderr)
        return 2
    Supervisor(ControlPlane(Path(argv[0]))).run()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
