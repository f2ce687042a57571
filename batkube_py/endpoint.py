"""The ZeroMQ REP endpoint: Batsim connects (REQ), we bind, and the two strictly alternate."""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import zmq

from batkube_py.decision import DecisionProcess
from batkube_py.protocol.codec import ProtocolError

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "tcp://127.0.0.1:28000"


@contextmanager
def long_lived_gc(young: int = 50_000) -> Iterator[None]:
    """Keep the cyclic GC off the hot loop's back.

    A run allocates a few short-lived containers per message and keeps every pod for its whole length;
    with CPython's defaults (a young collection every 700 allocations, full ones scanning the Kubernetes
    client's hundreds of thousands of import-time objects) the collector took ~25 % of the CPU of a
    10,000-job run. Import-time objects are frozen out of collections and young collections are rarer;
    the adapter makes little cyclic garbage, so memory does not grow from this.
    """
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(young, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


class PeerGone(RuntimeError):
    """Batsim went away (exited or stopped talking) before the simulation ended."""


class Endpoint:
    def __init__(self, address: str = DEFAULT_ENDPOINT):
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.REP)
        self._sock.setsockopt(zmq.LINGER, 0)
        try:
            self._sock.bind(address)
        except zmq.ZMQError as exc:
            self.close()
            raise PeerGone(f"cannot bind {address}: {exc}") from None
        self.address = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self.messages = 0

    def serve(
        self,
        process: DecisionProcess,
        *,
        peer_alive: Callable[[], bool] | None = None,
        on_reply: Callable[[DecisionProcess], None] | None = None,
        idle_timeout: float | None = None,
        poll_seconds: float = 0.2,
    ) -> None:
        """Answer Batsim until SIMULATION_ENDS has been acknowledged.

        Raises PeerGone when the peer dies or is silent for `idle_timeout` seconds, and ProtocolError
        (after no reply) when it sends something that is not a Batsim message: in both cases there is
        nothing sound left to answer.
        """
        with long_lived_gc():
            self._serve(process, peer_alive, on_reply, idle_timeout, poll_seconds)

    def _serve(self, process, peer_alive, on_reply, idle_timeout, poll_seconds) -> None:
        idle = 0.0
        # a receive timeout rather than poll() before each recv: one call per message, not a Poller each
        self._sock.setsockopt(zmq.RCVTIMEO, int(poll_seconds * 1000))
        while not process.ended:
            try:
                raw = self._sock.recv(copy=True)
            except zmq.Again:
                raw = None
            if raw is None:
                idle += poll_seconds
                if peer_alive is not None and not peer_alive():
                    raise PeerGone("Batsim exited before the simulation ended")
                if idle_timeout is not None and idle >= idle_timeout:
                    raise PeerGone(f"no message from Batsim for {idle_timeout:g} s")
                continue
            idle = 0.0
            self.messages += 1
            try:
                reply = process.handle(raw)
            except ProtocolError as exc:
                raise ProtocolError(f"message {self.messages} from Batsim: {exc}") from None
            self._sock.send(reply)
            if on_reply is not None:
                on_reply(process)

    def close(self) -> None:
        self._sock.close(linger=0)
        self._ctx.term()
