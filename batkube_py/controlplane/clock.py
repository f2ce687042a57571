"""Client of the simulated-clock control endpoint of batkube's kube-scheduler 1.37.2 main
(gobuild/kube-v1.37.2/cmd/kube-scheduler/control.go): begin a step at a simulated time, settle it."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any


class ClockError(RuntimeError):
    """The control endpoint refused or timed out; the message is the scheduler's own."""


class SchedulerClock:
    def __init__(self, address: str, run: str, timeout: float = 30.0):
        host, _, port = address.rpartition(":")
        self.address, self.run, self.timeout = address, run, timeout
        self._conn = http.client.HTTPConnection(host, int(port), timeout=timeout + 5)

    def _call(self, path: str, **params: Any) -> dict:
        query = urllib.parse.urlencode({"run": self.run, **params})
        for attempt in range(2):
            try:
                self._conn.request("POST", f"{path}?{query}")
                resp = self._conn.getresponse()
                body = resp.read().decode(errors="replace")
                break
            except (OSError, http.client.HTTPException) as exc:
                self._conn.close()
                if attempt:
                    raise ClockError(f"kube-scheduler's clock endpoint {self.address}: {exc}") from None
        if resp.status != 200:
            raise ClockError(f"kube-scheduler's clock endpoint {path}: {resp.status} {body.strip()}")
        return json.loads(body)

    def ready(self) -> dict:
        return self._call("/ready")

    def begin(self, t: float) -> dict:
        """Hold the scheduler's pops and set its queue's clock to simulated time t."""
        return self._call("/begin", t=repr(float(t)))

    def settle(self, want: dict[str, int], tick: float | None) -> dict:
        """Wait until the scheduler's handlers ran `want` times per event label, flush the leftover
        pods at the 30-s tick `tick` if given, then let it work until it has nothing left to do."""
        params: dict[str, Any] = {
            "want": ",".join(f"{k}:{v}" for k, v in sorted(want.items())),
            "timeout": self.timeout,
        }
        if tick is not None:
            params["tick"] = repr(float(tick))
        return self._call("/settle", **params)

    def end(self) -> None:
        try:
            self._call("/end")
        except ClockError:
            pass
        self._conn.close()
