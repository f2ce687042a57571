"""Pods that stop without finishing: preemption victims and pods of failed nodes.

Kubernetes recreates such pods (their controller does), so preempted or failed work is not lost. In
Batsim a killed job is over, so the adapter registers a new job for it — same job JSON, a fresh id
(`w0!7#r1`) — through Batsim's dynamic jobs (`--enable-dynamic-jobs`, which `batkube run` passes).
The new job names the killed job's own profile when Batsim keeps profiles (`--enable-profile-reuse`,
which `batkube run` passes too); otherwise a copy of the profile is registered first (Batsim drops a
finished job's profile), except for a `composed` profile: Batsim 4.2.1 resolves a composed profile's
members only when it loads a workload, and dies (SIGSEGV) executing one registered later, so such a
job is not resubmitted and its reason says why. Without dynamic jobs the pod is only recorded as
killed. Batsim then waits for `registration_finished` before it ends the simulation; it is sent once
nothing can need a resubmission any more.

Node failure policy (documented in the README): a Batsim machine that becomes unavailable is a node that
turned NotReady and unschedulable; its running pods are killed at once (kube's eviction of pods from an
unreachable node, without the 300-s toleration) and recreated, and it takes pods again when available.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any

from batkube_py.adapter.outputs import PodRecord
from batkube_py.adapter.podshape import SEQ_TYPES
from batkube_py.protocol import models as m
from batkube_py.protocol.reply import Reply

log = logging.getLogger(__name__)


@dataclass
class Disruptions:
    dynamic_jobs: bool = False
    acknowledged: bool = False
    profile_reuse: bool = False
    registration_closed: bool = False
    to_kill: list[str] = field(default_factory=list)
    killed: set[str] = field(default_factory=set)  # every job ever sent a KILL_JOB: Batsim kills once
    evicted: dict[str, str] = field(default_factory=dict)  # job id → why, until Batsim reports it killed
    resubmitted: int = 0
    preempted: int = 0
    node_failures: int = 0

    def summary(self) -> dict[str, int]:
        return {
            "jobs_preempted": self.preempted,
            "jobs_node_failures": self.node_failures,
            "jobs_resubmitted": self.resubmitted,
        }

    def configure(self, config: dict[str, Any]) -> None:
        self.dynamic_jobs = bool(config.get("dynamic-jobs-enabled"))
        self.acknowledged = bool(config.get("dynamic-jobs-acknowledged"))
        self.profile_reuse = bool(config.get("profile-reuse-enabled"))

    def evict(self, record: PodRecord, why: str, node_failure: bool) -> None:
        if record.job_id in self.evicted:
            return
        self.evicted[record.job_id] = why
        self.kill(record.job_id)
        if node_failure:
            self.node_failures += 1
        else:
            self.preempted += 1

    def kill(self, job_id: str) -> None:
        if job_id not in self.killed:
            self.killed.add(job_id)
            self.to_kill.append(job_id)

    def finished_unsent(self, job_id: str, reply: Reply) -> None:
        """The job ended in the message this reply answers, after a cycle of that message chose it as a
        victim: Batsim aborts on a kill of a finished job, so the kill is withdrawn (it still counts)."""
        if job_id in self.killed:
            if job_id in self.to_kill:
                self.to_kill.remove(job_id)
            reply.unkill(job_id)

    def flush_kills(self, reply: Reply) -> None:
        if self.to_kill:
            reply.add(m.KillJob(job_ids=sorted(self.to_kill)))
            self.to_kill.clear()

    def resubmission(
        self, record: PodRecord, job: dict[str, Any], profile: dict[str, Any], reply: Reply
    ) -> tuple[str, dict[str, Any], dict[str, Any] | None] | None:
        """Register the replacement of a killed job; returns (new id, job, the profile registered for it
        if any) or None if impossible."""
        why = self.evicted.pop(record.job_id, None)
        if why is None:
            return None
        record.reason = why
        if not self.dynamic_jobs or self.registration_closed:
            record.reason += "; not resubmitted (Batsim runs without --enable-dynamic-jobs)"
            return None
        if not self.profile_reuse and profile.get("type") == "composed":
            record.reason += ("; not resubmitted: Batsim 4.2.1 can run a composed profile again only with "
                              "--enable-profile-reuse")  # fmt: skip
            log.warning("job %s %s; not resubmitted (composed profile, no --enable-profile-reuse)",
                        record.job_id, why)  # fmt: skip
            return None
        self.resubmitted += 1
        workload, _, name = record.job_id.partition("!")
        base = name.split("#r", 1)[0]
        attempt = int(name.split("#r", 1)[1]) + 1 if "#r" in name else 1
        new_id = f"{workload}!{base}#r{attempt}"
        new_job = copy.deepcopy(job)
        new_job.update(id=new_id, subtime=reply.now)
        new_profile = None
        if not self.profile_reuse:
            new_job["profile"] = f"{job.get('profile')}#r{attempt}-{self.resubmitted}"
            new_profile = {k: copy.deepcopy(v) for k, v in profile.items() if k != SEQ_TYPES}
            reply.add(m.RegisterProfile(workload_name=workload, profile_name=new_job["profile"],
                                        profile=new_profile))  # fmt: skip
        reply.add(m.RegisterJob(job_id=new_id, job=new_job))
        record.reason += f"; resubmitted as {new_id}"
        log.info("job %s %s; resubmitted as %s", record.job_id, why, new_id)
        return new_id, new_job, new_profile

    def maybe_close(self, reply: Reply, everything_final: bool) -> None:
        """Tell Batsim no more jobs will be registered, once nothing is left that could need one."""
        if self.dynamic_jobs and not self.registration_closed and everything_final and not self.evicted:
            reply.add(m.NotifyOut(type="registration_finished"))
            self.registration_closed = True
