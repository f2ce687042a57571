"""A reply under construction, holding Batsim's rules so that a broken reply cannot be sent.

Batsim aborts the whole simulation (SIGABRT, empty outputs) on most rule violations
(transcripts/bad_replies), so each rule is checked where the event is added, naming the job.
"""

from __future__ import annotations

import logging

from procset import ProcSet
from pydantic import BaseModel

from batkube_py.protocol.codec import encode_reply
from batkube_py.protocol.models import OUTGOING, CallMeLater

log = logging.getLogger(__name__)

# Batsim checks CALL_ME_LATER against its clock when the event reaches its server process, which is
# the event's timestamp plus SimGrid's internal message latency (about 0.6-1.8 ms in the transcripts).
# A wake-up closer than this is moved to now + MIN_WAKEUP_GAP rather than risk "awaken in the past".
MIN_WAKEUP_GAP = 0.01


class ReplyRuleError(RuntimeError):
    """The decision process tried to send something Batsim would abort on: a bug in the adapter."""


class Reply:
    def __init__(self, now: float, wakeups: set[float] | None = None):
        """`wakeups`: the wake-ups already asked for and still ahead, shared across replies.

        Batsim answers every CALL_ME_LATER, duplicates included, so asking again for a time already
        asked for would only add messages.
        """
        self.now = now
        self._events: list[tuple[float, str, dict]] = []
        self._last = float("-inf")
        self._wakeups = wakeups if wakeups is not None else set()

    def __len__(self) -> int:
        return len(self._events)

    @property
    def events(self) -> list[tuple[float, str, dict]]:
        return list(self._events)

    def add(self, event: BaseModel, timestamp: float | None = None) -> None:
        ts = self.now if timestamp is None else timestamp
        self._append(ts, OUTGOING[type(event)], event.model_dump(exclude_none=True))

    def _append(self, ts: float, kind: str, data: dict) -> None:
        if ts > self.now:
            raise ReplyRuleError(f"event timestamp {ts} is later than the reply's now={self.now}")
        if ts < self._last:
            raise ReplyRuleError(f"event timestamp {ts} is earlier than the previous event's {self._last}")
        self._last = ts
        self._events.append((ts, kind, data))

    def execute(self, job_id: str, alloc: ProcSet, res: int) -> None:
        if len(alloc) != res or len(alloc) == 0:
            raise ReplyRuleError(f"job {job_id!r} needs {res} resource(s) but the allocation is {alloc}")
        self._append(self.now, "EXECUTE_JOB", {"job_id": job_id, "alloc": str(alloc)})

    def call_me_later(self, when: float) -> bool:
        """Ask for a wake-up strictly after Batsim's clock, since Batsim aborts on any other.

        A wake-up at or before now is dropped (the caller is already awake); one closer than
        MIN_WAKEUP_GAP is postponed to the gap, because Batsim's clock will have moved on by then.
        """
        if not when > self.now:
            log.debug("dropping CALL_ME_LATER at %s: not after now=%s", when, self.now)
            return False
        when = max(when, self.now + MIN_WAKEUP_GAP)
        if when in self._wakeups:
            return False
        self._wakeups.add(when)
        self.add(CallMeLater(timestamp=when))
        return True

    def encode(self) -> bytes:
        return encode_reply(self.now, self._events)
