"""One job's way through the cluster: submitted through the admission chain, its pods added and deleted,
finished, killed (and resubmitted) or rejected, and its record written once.

A part of DecisionProcess (decision.py), which owns the state these methods read: kept apart so that the
event loop and the cycles read on their own.
"""

from __future__ import annotations

import logging
import math

from batkube_py.adapter import admission, gangjobs, podshape, translate
from batkube_py.adapter.instant import ADD, DELETE
from batkube_py.adapter.outputs import PodRecord
from batkube_py.kueue.workload import pod_requests
from batkube_py.protocol import models as m
from batkube_py.protocol.reply import Reply

log = logging.getLogger("batkube_py.adapter.decision")


class JobFlow:
    def _submit(self, job_id: str, job: dict | None, forwarded: dict | None, ts: float, reply: Reply) -> None:
        if job_id in self.records:
            log.error("job %s submitted twice; the second submission is ignored", job_id)
            self._reject_record(
                translate.Rejection(job_id, "job_id", repr(job_id), "a job id not seen before")
            )
            return
        subtime = job.get("subtime") if job else None
        finite = isinstance(subtime, int | float) and not isinstance(subtime, bool) and math.isfinite(subtime)
        submit = float(subtime) if finite else ts
        name = translate.pod_name(job_id, self._job_of_pod.keys())
        record = PodRecord(job_id=job_id, pod=name, submit_time=submit)
        self.records[job_id] = record
        self._job_of_pod[name] = job_id
        if self.backend is None:
            return self._reject(
                record, reply, translate.Rejection(job_id, "-", "-", "SIMULATION_BEGINS first")
            )
        workload = job_id.split("!", 1)[0]
        profile = podshape.job_profile(job, forwarded, self._profiles.get(workload, {}))
        why = f"a working run ({self.fatal})" if self.fatal is not None else None
        admitted = admission.admit(record, job, profile, self.backend, self._admitted, why, self.no_request)
        if not isinstance(admitted, translate.Rejection):
            admitted = self.queue_jobs.admit(record, job, admitted)
        if not isinstance(admitted, translate.Rejection) and job["res"] > 1:
            admitted = self.gangs.admit(record, job, profile, admitted, self.backend, self._job_of_pod.keys())
        admitted = self.gates.admit(job_id, job, submit, self.backend, admitted)
        if isinstance(admitted, translate.Rejection):
            return self._reject(record, reply, admitted)
        self._jobs[job_id] = (job, profile)
        shape = admitted.shape if isinstance(admitted, gangjobs.Gang) else admitted
        self.queue_log.submitted(record, pod_requests(shape.template), job["res"])
        backend = self.backend
        if isinstance(admitted, gangjobs.Gang):
            self._job_of_pod.update((p, job_id) for p in (admitted.name, *admitted.pods))
            self._stage(ts, ADD, job_id, lambda: self._add_pods(job_id, name, ts))
            return
        pod = admission.PodToBe(job_id, name, admitted)
        self._to_build.append(pod)
        self._stage(ts, ADD, job_id, lambda: self.gates.add_pod(backend, pod.pod(), job_id, ts))

    def _finish(self, job_id: str, state: str, ts: float, batsim_state: str, reply: Reply) -> None:
        record = self.records.get(job_id)
        if record is None or record.state not in ("Running", "Pending", "Starting"):
            log.debug("ignoring completion of %s (%s)", job_id, "unknown" if record is None else record.state)
            return
        if self.backend is not None and record.pod in self._job_of_pod:
            name = record.pod
            self._stage(ts, DELETE, job_id, lambda: self._delete_pods(job_id, name, ts))
        record.finish_time, record.state = ts, state
        if state != "Succeeded":
            record.reason = batsim_state
        job, profile = self._jobs.get(job_id, (None, None))
        again = None
        if state == "Killed" and job is not None and self.fatal is None:
            again = self.disruptions.resubmission(record, job, profile, reply)
        self.disruptions.evicted.pop(job_id, None)
        self.disruptions.finished_unsent(job_id, reply)
        self._final(record)
        if again is not None:
            new_id, new_job, registered = again
            if registered is not None:
                self._profiles.setdefault(job_id.split("!", 1)[0], {})[new_job["profile"]] = registered
            if not self.disruptions.acknowledged:  # Batsim will not echo a JOB_SUBMITTED for it
                self._submit(new_id, new_job, profile, ts, reply)

    def _reject(self, record: PodRecord, reply: Reply, why: translate.Rejection) -> None:
        log.warning("rejecting %s", why.reason)
        record.state, record.reason = "Rejected", why.reason
        reply.add(m.RejectJob(job_id=record.job_id))
        self._reject_record(why, record.group)
        self.gangs.forget(record.job_id)
        self._final(record)

    def _reject_record(self, why: translate.Rejection, group: str = "") -> None:
        if self.outputs is not None:
            self.outputs.rejected(why, group)

    def _record_of(self, pod: str) -> PodRecord:
        return self.records[self._job_of_pod[pod]]

    def _delete_pods(self, job_id: str, name: str, now: float) -> None:
        assert self.backend is not None
        self.queue_log.released(self.records[job_id], now)
        if job_id in self.gangs:
            self.gangs.delete_from(self.backend, job_id, now)
            if self.records[job_id].state not in ("Pending", "Starting", "Running"):
                self.gangs.forget(job_id)
        else:
            self.backend.delete_pod(name, now)

    def _add_pods(self, job_id: str, name: str, now: float) -> None:
        assert self.backend is not None
        if job_id in self.gangs:
            return self.gangs.add_to(self.gates.through(self.backend), job_id, now)
        job, profile = self._jobs[job_id]
        shape = podshape.pod_shape(job_id, job, profile)
        assert not isinstance(shape, translate.Rejection)
        shape = self.queue_jobs.labelled(job_id, self.no_request.apply(shape, count=False))
        pod = podshape.assemble(job_id, name, shape)
        self.gates.add_pod(self.backend, pod, job_id, now)

    def _final(self, record: PodRecord) -> None:
        self.queue_log.gone(record, self.now)
        self.queue_jobs.forget(record.job_id)
        self.jobs_done += 1
        self._jobs.pop(record.job_id, None)
        if self.outputs is not None:
            self.outputs.pod(record)
