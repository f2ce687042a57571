"""The ZeroMQ endpoint: Batsim connects (REQ), we bind, and the two strictly alternate.

The socket is a ROUTER rather than a REP so that the adapter sees who is talking: the first peer whose
first message is a Batsim SIMULATION_BEGINS becomes *the* peer, and anything else that reaches the port
(an HTTP probe, a port scanner, another user's Batsim) is dropped without wedging the run or taking the
place of the legitimate peer. A ZAP domain is set so that libzmq refuses the unversioned ZMTP 1.0/2.0
fallback, through which raw TCP bytes would otherwise arrive as messages (no ZAP handler is bound, so
ZMTP 3 peers with the NULL mechanism, Batsim among them, are still accepted).

A socket monitor reports the peer's connection closing: a Batsim killed mid-run, or one that hung up so
that another client could take the port, ends the serve at once with that reason instead of after the
idle timeout (the peer's connection is the file descriptor its first message came on).
"""

from __future__ import annotations

import gc
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import zmq
from zmq.utils.monitor import parse_monitor_message

from batkube_py.adapter.decision import DecisionProcess
from batkube_py.protocol.codec import ProtocolError, decode_message

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "tcp://127.0.0.1:28000"  # Batsim's own default (`batsim -s`)
FREE_LOOPBACK = "tcp://127.0.0.1:*"  # a port nobody else picked: cannot be shared by accident
MAX_MESSAGE_BYTES = 1 << 30  # a peer sending more is disconnected by libzmq before we allocate it
HANDSHAKE_MS = 10_000  # a connection that never completes the ZMTP greeting is dropped after this

_TCP = re.compile(r"^tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\s]+):(?P<port>\*|\d{1,5})$")


class EndpointError(RuntimeError):
    """The endpoint cannot be bound: a malformed address, a taken port, a missing directory."""


class PeerGone(RuntimeError):
    """Batsim went away (exited or stopped talking) before the simulation ended."""


def check_address(address: str) -> str:
    """One clear line for a ZeroMQ endpoint this adapter cannot bind, before libzmq is asked."""
    if address.startswith("tcp://"):
        m = _TCP.match(address)
        if m is None:
            raise EndpointError(f"endpoint {address!r}: expected tcp://HOST:PORT (PORT a number or *)")
        if m["port"] != "*" and not 0 < int(m["port"]) < 65536:
            raise EndpointError(f"endpoint {address!r}: port must be in 1-65535 (or * for a free one)")
        return address
    if address.startswith("ipc://"):
        path = Path(address[len("ipc://") :])
        if not path.name:
            raise EndpointError(f"endpoint {address!r}: expected ipc://PATH of a socket file")
        parent = path.parent if str(path.parent) else Path(".")
        if not parent.is_dir():
            raise EndpointError(f"endpoint {address!r}: directory {parent} does not exist")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise EndpointError(f"endpoint {address!r}: directory {parent} is not writable")
        return address
    raise EndpointError(f"endpoint {address!r}: expected tcp://HOST:PORT or ipc://PATH")


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


class Endpoint:
    def __init__(self, address: str = FREE_LOOPBACK):
        check_address(address)
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.setsockopt(zmq.LINGER, 0)
        self._sock.setsockopt(zmq.ZAP_DOMAIN, b"batkube")
        self._sock.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_MS)
        self._sock.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        try:
            self._sock.bind(address)
        except zmq.ZMQError as exc:
            self.close()
            why = "already in use" if exc.errno == zmq.EADDRINUSE else exc.strerror
            raise EndpointError(f"cannot bind {address}: {why}") from None
        self.address = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._monitor = self._sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self._peer_fd: int | None = None
        self._first_fd: int | None = None
        self.messages = 0
        self.ignored = 0
        self.last_ignored = ""
        self._peer: bytes | None = None

    def serve(
        self,
        process: DecisionProcess,
        *,
        peer_alive: Callable[[], bool] | None = None,
        on_reply: Callable[[DecisionProcess], None] | None = None,
        idle_timeout: float | None = None,
        connect_timeout: float | None = None,
        poll_seconds: float = 0.2,
        transcript: Callable[[bytes, bytes], None] | None = None,
    ) -> None:
        """Answer Batsim until SIMULATION_ENDS has been acknowledged.

        Raises PeerGone when the peer dies, never sends SIMULATION_BEGINS within `connect_timeout`, or is
        silent for `idle_timeout` seconds after a reply (the adapter's own thinking time does not count),
        and ProtocolError (after no reply) when the peer sends something that is not a Batsim message.
        `transcript(message, reply)` is called with the raw bytes of each exchange with the peer.
        """
        with long_lived_gc():
            self._serve(
                process, peer_alive, on_reply, idle_timeout, connect_timeout, poll_seconds, transcript
            )

    def _serve(
        self, process, peer_alive, on_reply, idle_timeout, connect_timeout, poll_seconds, transcript
    ) -> None:
        # a receive timeout rather than poll() before each recv: one call per message, not a Poller each
        self._sock.setsockopt(zmq.RCVTIMEO, int(poll_seconds * 1000))
        send = self._sock.send
        since = time.monotonic()
        while not process.ended:
            try:
                frames = self._receive() if self._peer is not None else self._receive_first()
            except zmq.Again:
                self._check_waiting(since, peer_alive, idle_timeout, connect_timeout)
                continue
            if self._peer is None:
                reply = self._accept_first(frames, process)
                if reply is None:
                    continue
            elif frames[0] != self._peer:
                self._ignore("a message from a second peer while Batsim is connected")
                continue
            elif len(frames) != 3 or frames[1] != b"":
                raise ProtocolError(
                    f"message {self.messages + 1} from Batsim has {len(frames) - 2} parts "
                    "(expected one frame after the REQ envelope)"
                )
            else:
                self.messages += 1
                try:
                    reply = process.handle(frames[2])
                except ProtocolError as exc:
                    raise ProtocolError(f"message {self.messages} from Batsim: {exc}") from None
            # frame by frame: send_multipart's checks cost more than the two envelope frames
            send(self._peer, zmq.SNDMORE)
            send(b"", zmq.SNDMORE)
            send(reply)
            since = time.monotonic()
            # what the reply did not need runs while Batsim works on it (off the critical path)
            process.after_reply()
            if transcript is not None:
                transcript(frames[2], reply)
            if on_reply is not None:
                on_reply(process)

    def _receive(self) -> list[bytes]:
        """One message's frames; the socket's own calls, as recv_multipart's per-frame lookups show at
        tens of thousands of messages."""
        recv, more = self._sock.recv, self._sock.get
        frames = [recv()]
        while more(zmq.RCVMORE):
            frames.append(recv())
        return frames

    def _receive_first(self) -> list[bytes]:
        """A message while no peer is pinned, with the connection it came on (for the monitor)."""
        frames = self._sock.recv_multipart(copy=False)
        try:
            self._first_fd = frames[-1].get(zmq.SRCFD)
        except zmq.ZMQError:  # a libzmq without ZMQ_SRCFD: the idle timeout still bounds the wait
            self._first_fd = None
        return [f.bytes for f in frames]

    def _accept_first(self, frames: list[bytes], process: DecisionProcess) -> bytes | None:
        """Pins the peer whose first message is a Batsim SIMULATION_BEGINS; returns the reply to it."""
        if len(frames) != 3 or frames[1] != b"":
            self._ignore(f"a {len(frames) - 1}-part message, not a REQ peer's single frame")
            return None
        try:
            msg, unknown = decode_message(frames[2])
        except ProtocolError as exc:
            self._ignore(f"not a Batsim message ({str(exc)[:120]})")
            return None
        if not msg.events or msg.events[0].type != "SIMULATION_BEGINS":
            self._ignore("a first message without SIMULATION_BEGINS")
            return None
        self._peer = frames[0]
        while self._monitor.poll(0):  # earlier closes were other connections, whatever their fd
            self._monitor.recv_multipart()
        self._peer_fd = self._first_fd
        self.messages += 1
        return process.handle_decoded(msg, unknown)

    def _ignore(self, why: str) -> None:
        self.ignored += 1
        self.last_ignored = f"message {self.ignored} not from Batsim: {why}"
        log.warning("ignored %s", self.last_ignored)

    def _junk(self) -> str:
        return f" (ignored {self.ignored} message(s); last: {self.last_ignored})" if self.ignored else ""

    def _peer_disconnected(self) -> bool:
        gone = False
        while self._monitor.poll(0):
            event = parse_monitor_message(self._monitor.recv_multipart())
            gone = gone or (self._peer_fd is not None and event["value"] == self._peer_fd)
        return gone

    def _check_waiting(self, since, peer_alive, idle_timeout, connect_timeout) -> None:
        waited = time.monotonic() - since
        if peer_alive is not None and not peer_alive():
            raise PeerGone(f"Batsim exited before the simulation ended{self._junk()}")
        if self._peer_disconnected():
            raise PeerGone(f"Batsim closed its connection before the simulation ended{self._junk()}")
        if self._peer is None and connect_timeout is not None and waited >= connect_timeout:
            raise PeerGone(f"no Batsim message on {self.address} within {connect_timeout:g} s{self._junk()}")
        if self._peer is not None and idle_timeout is not None and waited >= idle_timeout:
            raise PeerGone(f"no message from Batsim for {idle_timeout:g} s")

    def close(self) -> None:
        if (monitor := getattr(self, "_monitor", None)) is not None:
            self._sock.disable_monitor()
            monitor.close(linger=0)
        self._sock.close(linger=0)
        self._ctx.term()
