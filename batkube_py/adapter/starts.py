"""From a binding to Batsim's EXECUTE_JOB: at once, or after the pod's startup latency.

A pod holds its node from the binding on, as in Kubernetes; under a latency model (`--startup`) Batsim
only hears of the job when the container would be running, so the job's start is the binding plus the
sampled latency (startup.py).
"""

from __future__ import annotations

import heapq

from batkube_py.adapter.gangjobs import Gangs
from batkube_py.adapter.hosts import Hosts
from batkube_py.adapter.outputs import PodRecord
from batkube_py.adapter.startup import StartupLatency
from batkube_py.protocol.reply import Reply


class Starts:
    def __init__(self, startup: StartupLatency | None, hosts: Hosts, gangs: Gangs):
        self.startup = startup
        self.hosts = hosts
        self.gangs = gangs
        self._due: list[tuple[float, int, str]] = []  # (start time, order, job id)

    def bound(self, record: PodRecord, now: float, reply: Reply) -> None:
        """The job's last pod is bound: it runs now, or once its container would have started."""
        record.bind_time = now
        if self.startup is None:
            self.execute(record, now, reply)
            return
        record.state = "Starting"
        heapq.heappush(self._due, (now + self.startup.sample(), len(self._due), record.job_id))

    def execute(self, record: PodRecord, now: float, reply: Reply) -> None:
        record.start_time = now
        record.state = "Running"
        if record.group:
            gang = self.gangs.by_job[record.job_id]
            reply.execute(record.job_id, gang.alloc, record.group_size, gang.alloc_text, gang.mapping)
            return
        reply.execute(record.job_id, self.hosts.alloc[record.node], 1, self.hosts.alloc_text[record.node])

    def run_due(self, now: float, records: dict[str, PodRecord], reply: Reply) -> None:
        """Jobs whose container started by `now`; a job restarted or finished meanwhile is no longer due."""
        while self._due and self._due[0][0] <= now:
            record = records[heapq.heappop(self._due)[2]]
            if record.state == "Starting":
                self.execute(record, now, reply)

    def next_due(self) -> float | None:
        return self._due[0][0] if self._due else None
