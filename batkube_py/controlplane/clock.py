"""Client of the simulated-clock control endpoint of batkube's kube-scheduler 1.37.2 main
(gobuild/kube-v1.37.2/cmd/kube-scheduler/control.go): begin a step at a simulated time, settle it."""

from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from typing import Any


class ClockError(RuntimeError):
    """The control endpoint refused or timed out; the message is the scheduler's own."""


class SchedulerClock:
    """Two requests a Batsim step, on one kept-alive loopback connection. The endpoint always states
    its reply's length, so a request is one write and a reply is read with one header: http.client
    spent more CPU parsing headers than the scheduler spent answering."""

    component = "kube-scheduler"

    def __init__(self, address: str, run: str, timeout: float = 30.0):
        host, _, port = address.rpartition(":")
        self.address, self.run, self.timeout = address, run, timeout
        self._peer = (host, int(port))
        self._sock: socket.socket | None = None
        self._buf = b""
        self._served = False  # a request was answered: a connection lost after that is a dead scheduler
        self._lost: str | None = None
        self._fresh = False

    def _connect(self) -> socket.socket:
        if self._sock is None:
            self._sock = socket.create_connection(self._peer, timeout=self.timeout + 5)
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._buf = b""
        return self._sock

    def _close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock, self._buf = None, b""

    def _read_until(self, sock: socket.socket, done) -> None:
        while not done():
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionResetError("the clock endpoint closed the connection")
            self._buf += chunk

    def _send(self, path: str, params: dict[str, Any]) -> None:
        if self._lost:
            raise ClockError(self._lost)
        query = urllib.parse.urlencode({"run": self.run, **params})
        self._fresh = self._sock is None and not self._served
        try:
            request = f"POST {path}?{query} HTTP/1.1\r\nHost: batkube\r\nContent-Length: 0\r\n\r\n"
            self._connect().sendall(request.encode())
        except OSError as exc:
            raise self._broken(path, exc) from None

    def _receive(self, path: str) -> dict:
        try:
            sock = self._connect()
            self._read_until(sock, lambda: b"\r\n\r\n" in self._buf)
            head, self._buf = self._buf.split(b"\r\n\r\n", 1)
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            length = next((int(v) for k, _, v in (x.partition(":") for x in lines[1:])
                           if k.strip().lower() == "content-length"), None)  # fmt: skip
            if length is None:
                raise http.client.HTTPException(f"no Content-Length in the reply to {path}")
            self._read_until(sock, lambda: len(self._buf) >= length)
            body, self._buf = self._buf[:length].decode(errors="replace"), self._buf[length:]
        except (OSError, http.client.HTTPException, ValueError, IndexError) as exc:
            raise self._broken(path, exc) from None
        self._served = True
        if status != 200:
            raise ClockError(f"{self.component}'s clock endpoint {path}: {status} {body.strip()}")
        return json.loads(body)

    def _broken(self, path: str, exc: Exception) -> ClockError:
        """Never retried on a new connection: the endpoint keeps its connections open, so a dropped one
        means the scheduler died (or was restarted, with an empty queue and a wall clock): the run
        cannot go on as if nothing happened."""
        self._close()
        if not isinstance(exc, OSError):
            why = f"sent an unreadable reply to {path}: {exc}"
        elif isinstance(exc, TimeoutError | socket.timeout):
            why = f"did not answer {path} within {self.timeout + 5:g} s"
        elif self._fresh:
            why = f"refused the connection ({type(exc).__name__}): is {self.component} running?"
        else:
            why = (f"dropped its connection during {path} ({type(exc).__name__}): {self.component} "
                   "died or was restarted, and its queue with it")  # fmt: skip
        self._lost = f"{self.component}'s clock endpoint {self.address} {why}"
        return ClockError(self._lost)

    def _call(self, path: str, **params: Any) -> dict:
        self._send(path, params)
        return self._receive(path)

    def ready(self) -> dict:
        return self._call("/ready")

    def begin(self, t: float) -> dict:
        """Hold the scheduler's pops and set its queue's clock to simulated time t."""
        return self._call("/begin", t=repr(float(t)))

    def settle(self, want: dict[str, int], tick: float | None, t: float | None = None) -> dict:
        """Wait until the scheduler's handlers ran `want` times per event label, flush the leftover
        pods at the 30-s tick `tick` if given, then let it work until it has nothing left to do;
        with `t`, begin the step at simulated time t first (one request instead of two)."""
        self.settle_send(want, tick, t)
        return self.settle_reply()

    def settle_send(self, want: dict[str, int], tick: float | None, t: float | None = None) -> None:
        """The settle request alone: its reply (`settle_reply`) may be awaited from another thread."""
        params: dict[str, Any] = {
            "want": ",".join(f"{k}:{v}" for k, v in sorted(want.items())),
            "timeout": self.timeout,
        }
        if tick is not None:
            params["tick"] = repr(float(tick))
        if t is not None:
            params["t"] = repr(float(t))
        self._send("/settle", params)

    def settle_reply(self) -> dict:
        return self._receive("/settle")

    def end(self) -> None:
        try:
            self._call("/end")
        except ClockError:
            pass
        self._close()
