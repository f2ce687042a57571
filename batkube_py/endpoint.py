"""The ZeroMQ REP endpoint: Batsim connects (REQ), we bind, and the two strictly alternate."""

from __future__ import annotations

import logging
from collections.abc import Callable

import zmq

from batkube_py.decision import DecisionProcess
from batkube_py.protocol.codec import ProtocolError

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "tcp://127.0.0.1:28000"


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
        idle = 0.0
        while not process.ended:
            if not self._sock.poll(int(poll_seconds * 1000)):
                idle += poll_seconds
                if peer_alive is not None and not peer_alive():
                    raise PeerGone("Batsim exited before the simulation ended")
                if idle_timeout is not None and idle >= idle_timeout:
                    raise PeerGone(f"no message from Batsim for {idle_timeout:g} s")
                continue
            idle = 0.0
            raw = self._sock.recv()
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
