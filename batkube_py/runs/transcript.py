"""The adapter's own transcript, and a decision process that costs nothing: one that replays it.

A transcript is what crossed the adapter's socket, raw: line 1 is Batsim's first message, line 2 the
reply sent to it, and so on, alternating. Batsim and the adapter both write compact JSON (no newline
inside a message), so writing it is two `write` calls per message into a large buffer: no decoding, no
re-encoding. A message that did hold a raw newline (JSON whitespace, never inside a string) is written
with it turned into a space, and the replayer compares what it receives the same way.

`batkube replay TRANSCRIPT --socket ENDPOINT` answers message i with recorded reply i, after checking
that message i is byte for byte the recorded one, and does nothing else. Batsim driven by it runs the
very schedule of the recorded run with a decision process whose thinking time is zero: the physical
limit the adapter's overhead is measured against (benchmarks/adapter_overhead.py). It imports nothing
heavy, so its start costs nothing either.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import BinaryIO

import click
import zmq

BUFFER = 1 << 20


def one_line(message: bytes) -> bytes:
    return message.replace(b"\n", b" ") if b"\n" in message else message


class TranscriptWriter:
    """Appends (message, reply) pairs; buffered, flushed on close (the run's `finally`)."""

    def __init__(self, path: Path):
        self.path = path
        self._file: BinaryIO = open(path, "wb", buffering=BUFFER)  # noqa: SIM115 (closed by close())

    def record(self, message: bytes, reply: bytes) -> None:
        write = self._file.write
        write(one_line(message))
        write(b"\n")
        write(reply)
        write(b"\n")

    def close(self) -> None:
        self._file.close()


class TranscriptError(ValueError):
    """The transcript is not one, or Batsim sent something else than what it recorded."""


def load(path: Path) -> list[bytes]:
    """The transcript's lines: messages at even indices, replies at odd ones."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read transcript {path}: {exc.strerror}") from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines or len(lines) % 2:
        raise TranscriptError(
            f"transcript {path}: expected message and reply lines in pairs, got {len(lines)} line(s)"
        )
    return lines


def where(got: bytes, recorded: bytes, context: int = 60) -> str:
    """Where two messages part: the byte offset and a window around it in both, so that the difference
    shows however long the common beginning (SIMULATION_BEGINS holds the whole platform)."""
    at = next((k for k, (a, b) in enumerate(zip(got, recorded, strict=False)) if a != b), None)
    at = min(len(got), len(recorded)) if at is None else at
    lo = max(0, at - context)

    def window(text: bytes) -> str:
        more = "…" if at + context < len(text) else ""
        return ("…" if lo else "") + repr(text[lo : at + context])[2:-1] + more

    return f"at byte {at}:\n  got      {window(got)}\n  recorded {window(recorded)}"


def replay(lines: list[bytes], endpoint: str, idle_timeout: float = 600.0) -> int:
    """Serves Batsim (REQ) on `endpoint` (bound, REP) with the recorded replies; returns the count."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 5000)  # the last reply (SIMULATION_ENDS' ack) must still leave
    sock.setsockopt(zmq.RCVTIMEO, int(idle_timeout * 1000))
    try:
        sock.bind(endpoint)
        recv, send = sock.recv, sock.send
        for i in range(0, len(lines), 2):
            try:
                message = recv()
            except zmq.Again:
                why = f"no message {i // 2 + 1} from Batsim within {idle_timeout:g} s"
                raise TranscriptError(why) from None
            if (got := one_line(message)) != lines[i]:
                raise TranscriptError(
                    f"message {i // 2 + 1} from Batsim differs from the recorded one {where(got, lines[i])}"
                )
            send(lines[i + 1])
    except zmq.ZMQError as exc:
        raise TranscriptError(f"cannot serve on {endpoint}: {exc.strerror}") from None
    finally:
        sock.close()
        ctx.term()
    return len(lines) // 2


@click.command("replay")
@click.argument("transcript", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--socket", "endpoint", required=True, help="ZeroMQ endpoint to bind (Batsim's -s).")
@click.option("--idle-timeout", type=float, default=600.0, show_default=True,
              help="Give up after this many seconds without a message from Batsim.")  # fmt: skip
def replay_cmd(transcript: Path, endpoint: str, idle_timeout: float) -> None:
    """Answer Batsim with the replies of a recorded run (`batkube run --transcript`), checking that
    every message Batsim sends is the recorded one: Batsim's cost for that schedule, alone."""
    try:
        n = replay(load(transcript), endpoint, idle_timeout)
    except TranscriptError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"replayed {n} replies", err=True)


if __name__ == "__main__":
    sys.exit(replay_cmd())
