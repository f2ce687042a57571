"""What settle reads of kube-scheduler's own /metrics: its queues (active, backoff, unschedulable, gated),
pods in flight and binding, its node cache, and the event handlers it has run."""

from __future__ import annotations

import http.client
import re
import ssl
import urllib.parse
from dataclasses import dataclass, field


@dataclass
class Metrics:
    active: float = 0
    backoff: float = 0
    unschedulable: float = 0
    gated: float = 0
    in_flight: float = 0
    binding: float = 0
    nodes: float = 0
    attempts: float = 0
    errors: float = 0  # attempts that failed on an error (an API call), not for want of a node
    events: dict[str, float] = field(default_factory=dict)  # event handlers completed, by event label

    @property
    def queued(self) -> float:
        return self.active + self.backoff + self.unschedulable + self.gated

    @property
    def idle(self) -> bool:
        """Nothing to try now: no pod active, in flight, backing off or binding."""
        return self.idle_but(0)

    def idle_but(self, backoff: float) -> bool:
        """Idle except for at most `backoff` pods backing off."""
        return not (self.active or self.in_flight or self.binding) and self.backoff <= backoff


# The metric families settle reads; each scrape is ~260 kB, mostly histogram buckets nobody here needs.
_WANTED = tuple(
    b"\n" + name
    for name in (
        b"scheduler_pending_pods",
        b"scheduler_inflight_events",
        b"scheduler_goroutines",
        b"scheduler_scheduler_cache_size",  # until 1.33
        b"scheduler_cache_size",
        b"scheduler_event_handling_duration_seconds_count",
        b"scheduler_schedule_attempts_total",
    )
)


def wanted_lines(body: bytes) -> str:
    """The sample lines of the families settle reads, found with bytes.find instead of a full parse."""
    out = []
    for needle in _WANTED:
        i = body.find(needle)
        while i != -1:
            j = body.find(b"\n", i + 1)
            out.append(body[i + 1 : j if j != -1 else len(body)])
            i = body.find(needle, j) if j != -1 else -1
    return b"\n".join(out).decode()


_LINE = re.compile(r"^(scheduler_[a-z_]+)(?:\{([^}]*)\})? ([0-9.eE+-]+)$", re.M)


def parse_metrics(text: str) -> Metrics:
    m = Metrics()
    for name, labels, value in _LINE.findall(text):
        v = float(value)
        if name == "scheduler_pending_pods":
            q = re.search(r'queue="([a-z]+)"', labels)
            if q and q.group(1) in ("active", "backoff", "unschedulable", "gated"):
                setattr(m, q.group(1), v)
        elif name == "scheduler_inflight_events" and 'event="PodPopped"' in labels:
            m.in_flight = v
        elif name == "scheduler_goroutines" and 'operation="binding"' in labels:
            m.binding = v
        elif name in ("scheduler_scheduler_cache_size", "scheduler_cache_size") and 'type="nodes"' in labels:
            m.nodes = v
        elif name == "scheduler_event_handling_duration_seconds_count":
            e = re.search(r'event="([A-Za-z]+)"', labels)
            if e:  # 1.33 renamed the UnschedulablePod event resource UnscheduledPod
                label = e.group(1).replace("UnscheduledPod", "UnschedulablePod")
                m.events[label] = m.events.get(label, 0) + v
        elif name == "scheduler_schedule_attempts_total":
            m.attempts += v
            m.errors += v if 'result="error"' in labels else 0
    return m


class MetricsSource:
    """Scrapes kube-scheduler's /metrics over one kept-alive loopback connection (a scrape is ~300 kB)."""

    def __init__(self, url: str, timeout: float = 2.0):
        self.url = url
        parts = urllib.parse.urlsplit(url)
        self._host, self._port, self._path = parts.hostname, parts.port, parts.path or "/metrics"
        self._https = parts.scheme == "https"
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:  # loopback, the scheduler's self-signed serving certificate
            ctx = ssl._create_unverified_context()
            return http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout, context=ctx)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def scrape(self) -> Metrics | None:
        for _ in range(2):
            try:
                if self._conn is None:
                    self._conn = self._connect()
                self._conn.request("GET", self._path)
                resp = self._conn.getresponse()
                body = resp.read()
                if resp.status != 200:
                    return None
                return parse_metrics(wanted_lines(body))
            except (OSError, http.client.HTTPException, ValueError):
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
        return None
