"""A reply under construction, holding Batsim's rules so that a broken reply cannot be sent.

Batsim aborts the whole simulation (SIGABRT, empty outputs) on most rule violations
(transcripts/bad_replies), so each rule is checked where the event is added, naming the job.
"""

from __future__ import annotations

import logging
import math

from procset import ProcSet
from pydantic import BaseModel

from batkube_py.protocol.codec import encode_reply
from batkube_py.protocol.models import OUTGOING

log = logging.getLogger(__name__)

# Batsim checks CALL_ME_LATER against its clock when the event reaches its server process, which is
# the event's timestamp plus SimGrid's internal message latency (about 0.6-1.8 ms in the transcripts).
# A wake-up closer than this is moved to now + MIN_WAKEUP_GAP rather than risk "awaken in the past".
MIN_WAKEUP_GAP = 0.01
# Batsim writes times with 6 decimals, so the REQUESTED_CALL for a wake-up at t may say now = t - 1e-6.
TIME_RESOLUTION = 1e-6


class ReplyRuleError(RuntimeError):
    """The decision process tried to send something Batsim would abort on: a bug in the adapter."""


class Reply:
    def __init__(self, now: float):
        if not math.isfinite(now):
            raise ReplyRuleError(f"reply time now={now} is not a finite number")
        self.now = now
        self._events: list[tuple[float, str, dict]] = []
        self._last = float("-inf")
        self._wakeups: set[float] = set()

    def __len__(self) -> int:
        return len(self._events)

    @property
    def events(self) -> list[tuple[float, str, dict]]:
        return list(self._events)

    def add(self, event: BaseModel, timestamp: float | None = None) -> None:
        ts = self.now if timestamp is None else timestamp
        self._append(ts, OUTGOING[type(event)], event.model_dump(exclude_none=True))

    def _append(self, ts: float, kind: str, data: dict) -> None:
        if not math.isfinite(ts):  # the JSON encoder would write null, which Batsim rejects
            raise ReplyRuleError(f"{kind} timestamp {ts} is not a finite number")
        if ts > self.now:
            raise ReplyRuleError(f"event timestamp {ts} is later than the reply's now={self.now}")
        if ts < self._last:
            raise ReplyRuleError(f"event timestamp {ts} is earlier than the previous event's {self._last}")
        self._last = ts
        self._events.append((ts, kind, data))

    def unkill(self, job_id: str) -> None:
        """Take `job_id` out of this reply's KILL_JOB events (dropping an event left empty)."""
        kept = []
        for ts, kind, data in self._events:
            if kind == "KILL_JOB" and job_id in data["job_ids"]:
                data = {**data, "job_ids": [j for j in data["job_ids"] if j != job_id]}
                if not data["job_ids"]:
                    continue
            kept.append((ts, kind, data))
        self._events = kept

    def execute(
        self, job_id: str, alloc: ProcSet, res: int, text: str | None = None, mapping: dict | None = None
    ) -> None:
        """`text`: str(alloc) when the caller keeps it (formatting a ProcSet shows at 10,000 jobs).
        `mapping`: executor → index in the alloc (strings, as Batsim writes them) when executors share
        hosts; Batsim 4.2.1 then accepts an alloc smaller than res."""
        if mapping is not None:
            if len(mapping) != res or any(not 0 <= int(v) < len(alloc) for v in mapping.values()):
                raise ReplyRuleError(f"job {job_id!r}: mapping {mapping} is not {res} executors on {alloc}")
            self._append(
                self.now, "EXECUTE_JOB", {"job_id": job_id, "alloc": text or str(alloc), "mapping": mapping}
            )
            return
        if len(alloc) != res or len(alloc) == 0:
            raise ReplyRuleError(f"job {job_id!r} needs {res} resource(s) but the allocation is {alloc}")
        self._append(self.now, "EXECUTE_JOB", {"job_id": job_id, "alloc": text or str(alloc)})

    def call_me_later(self, when: float) -> float | None:
        """Ask for a wake-up strictly after Batsim's clock, since Batsim aborts on any other.

        A wake-up at or before now is dropped (the caller is already awake); one closer than
        MIN_WAKEUP_GAP is postponed to the gap, because Batsim's clock will have moved on by then.
        Returns the time asked for, None if nothing was added.
        """
        if math.isnan(when) or when <= self.now:
            log.debug("dropping CALL_ME_LATER at %s: not after now=%s", when, self.now)
            return None
        if math.isinf(when):
            raise ReplyRuleError("CALL_ME_LATER at infinity: ask for no wake-up instead")
        when = max(when, self.now + MIN_WAKEUP_GAP)
        if when in self._wakeups:
            return None
        self._wakeups.add(when)
        self._append(self.now, "CALL_ME_LATER", {"timestamp": when})  # CallMeLater's dump, built direct
        return when

    def encode(self) -> bytes:
        return encode_reply(self.now, self._events)
