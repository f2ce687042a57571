"""Batsim 4.2.1's machine states: the counts behind ``<prefix>_machine_states.csv``, and the checks on the
external events that make machines (un)available.

export.cpp's MachineStateTracer writes a row ``%g`` time and the number of machines in each state after
every job start and every job end (machines.cpp update_machines_on_job_run / _on_job_end), one row per
job whatever the number of machines, even when no count changed. The counts start with every compute
machine idle. A job start makes its machines computing even when unavailable; a job end makes a machine
with no job left idle unless it is unavailable. server.cpp aborts (xbt_assert, SIGABRT) on an event that
makes an unavailable machine unavailable, or an available one available, and writes no row for either.
The file is created empty at the start and written at the end: on an abort, std::ofstream's buffer is
never flushed, so the file stays empty, as the transcripts of aborted runs show.
"""

from __future__ import annotations

from .errors import check

HEADER = "time,nb_sleeping,nb_switching_on,nb_switching_off,nb_idle,nb_computing\n"
SERVER = "../src/server.cpp"


def machine_ids(resources: object) -> list[int]:
    """Batsim's IntervalSet text ("0-3 7") as ids."""
    ids: list[int] = []
    for part in str(resources).split():
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


class MachineStates:
    def __init__(self, names: list[str], nb_compute: int) -> None:
        self.names = names
        self.state = ["idle"] * len(names)
        self.count = {"idle": nb_compute, "computing": 0, "unavailable": 0}
        self.rows = [HEADER]

    def _set(self, mid: int, new: str) -> None:
        self.count[self.state[mid]] -= 1
        self.count[new] += 1
        self.state[mid] = new

    def _row(self, now: float) -> None:
        self.rows.append(f"{now:g},0,0,0,{self.count['idle']},{self.count['computing']}\n")

    def job_ran(self, alloc: list[int], now: float) -> None:
        for mid in alloc:
            self._set(mid, "computing")
        self._row(now)

    def job_ended(self, alloc: list[int], left: list[bool], now: float) -> None:
        """`left[i]`: whether alloc[i] still computes another job."""
        for mid, busy in zip(alloc, left, strict=True):
            if not busy and self.state[mid] != "unavailable":
                self._set(mid, "idle")
        self._row(now)

    def event(self, etype: str, resources: object, busy: list[bool]) -> None:
        """A machine_(un)available external event; `busy[id]`: whether the machine computes a job."""
        for mid in machine_ids(resources):
            check(0 <= mid < len(self.names), f"Cannot get machine {mid}: it does not exist",
                  "../src/machines.cpp:352")
            name, state = self.names[mid], self.state[mid]
            if etype == "machine_unavailable":
                check(state != "unavailable", f"The making of machine {mid} ('{name}') unavailable was "
                      "requested but this machine was already in UNAVAILABLE state.", f"{SERVER}:343")
                self._set(mid, "unavailable")
            else:
                check(state == "unavailable", f"The making of machine {mid} ('{name}') available was "
                      "requested but this machine was not in UNAVAILABLE state (current state: "
                      f"{state}).", f"{SERVER}:370")
                self._set(mid, "computing" if busy[mid] else "idle")

    def csv(self) -> str:
        return "".join(self.rows)
