"""What a job without a cpu request asks for (`--no-request`).

A standard Batsim workload has no `cpu` field: its jobs ask for `res` hosts, and Batsim (without compute
sharing) gives each job its hosts for itself. A pod without a cpu request is BestEffort in Kubernetes:
it fits any node however loaded, so 20 such jobs on 4 one-core nodes would all start at once. Hence:

- ``exclusive`` (the default, what a Batsim user expects): the pod requests a whole node's allocatable
  cpu, so it holds its node as the job would hold its host. Requests are the same on every node, so on
  a platform whose nodes differ it is the smallest node's cpu (every such job fits every node; on a
  larger node, pods that fit the rest may join it), and the log says so.
- ``besteffort``: Kubernetes' own meaning, no request.

Either way the run's log and summary.json say which applied and to how many jobs.
"""

from __future__ import annotations

import logging
import weakref
from typing import Literal

from kubernetes import client

from batkube_py import quantities
from batkube_py.adapter import podshape

log = logging.getLogger(__name__)

Mode = Literal["exclusive", "besteffort"]
MODES: tuple[Mode, ...] = ("exclusive", "besteffort")


class NoRequest:
    def __init__(self, mode: Mode = "exclusive"):
        if mode not in MODES:
            raise ValueError(f"--no-request must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self.jobs = 0
        self.cpu: str | None = None  # the request given, exclusive mode
        self._exclusive: weakref.WeakKeyDictionary[podshape.Shape, podshape.Shape] = (
            weakref.WeakKeyDictionary()
        )

    def configure(self, nodes: list[client.V1Node]) -> None:
        """The cluster is known (SIMULATION_BEGINS): an exclusive pod asks for the smallest node's cpu."""
        cpus = sorted({quantities.milli_cpu((n.status.allocatable or {}).get("cpu", "0")) for n in nodes})
        if not cpus or self.mode != "exclusive":
            return
        self.cpu = quantities.format_milli_cpu(cpus[0])
        if len(cpus) > 1:
            log.warning(
                "--no-request exclusive: nodes differ in cpu (%s to %s); a job without a cpu request asks "
                "for %s, the smallest node's, so it holds a node of that size but may share a larger one",
                quantities.format_milli_cpu(cpus[0]), quantities.format_milli_cpu(cpus[-1]), self.cpu,
            )  # fmt: skip

    def apply(self, shape: podshape.Shape, count: bool = True) -> podshape.Shape:
        """The shape the job's pod gets: as asked if it asks for cpu, else per the mode; `count` is False
        for a job's new pod (restarted), counted already."""
        requests = shape.container.resources.requests or {}
        if "cpu" in requests:
            return shape
        self.jobs += count
        if self.mode == "besteffort" or self.cpu is None:
            return shape
        done = self._exclusive.get(shape)
        if done is None:
            done = self._exclusive[shape] = podshape.with_requests(shape, {"cpu": self.cpu})
        return done

    def summary(self) -> dict[str, object]:
        return {"no_request": self.mode, "no_request_jobs": self.jobs, "no_request_cpu": self.cpu}

    def log_summary(self) -> None:
        if self.jobs:
            exclusive = self.mode == "exclusive" and self.cpu
            what = f"each requested {self.cpu} cpu (a whole node)" if exclusive else "each a BestEffort pod"
            log.info("--no-request %s: %d job(s) without a cpu request; %s", self.mode, self.jobs, what)
