"""The run directory: claimed by one run at a time, never mixing two runs' files, never an input's home.

A run appends pods.csv rows as pods finish, so two runs in one directory interleave, and a run into a
used directory leaves the earlier run's files beside its own (decisions.jsonl read later as this run's).
So a directory holding a run's outputs is refused unless the user says `--overwrite`, which empties it
first, and only after every other check has passed: a re-run that cannot start leaves a good run alone.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCK = ".batkube.lock"
# What a run (ours or Batsim's, `-e OUT/out`) leaves in its directory; experiment.log is the runner's.
OUTPUTS = (
    "summary.json", "pods.csv", "rejected.csv", "nodes.csv", "decisions.jsonl", "admissions.jsonl",
    "batkube.log", "batsim_cmdline.txt", "batsim.stdout", "batsim.stderr", "controlplane", "INCOMPLETE",
)  # fmt: skip


class RunDirError(RuntimeError):
    pass


def previous_outputs(out: Path) -> list[str]:
    names = [n for n in OUTPUTS if (out / n).exists()]
    return names + sorted(p.name for p in out.glob("out_*"))


def check_inputs_outside(out: Path, inputs: dict[str, Path | None]) -> None:
    """An input inside the run directory would be overwritten or cleared by the run's own outputs."""
    root = out.resolve()
    for what, path in inputs.items():
        if path is None:
            continue
        p = path.resolve()
        if p == root or root in p.parents:
            raise RunDirError(
                f"{what} {path} is inside the output directory {out}: the run would overwrite it; "
                "choose another -o"
            )


def _make(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise RunDirError(f"output directory {out} is a file, not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirError(f"cannot create output directory {out}: {exc.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise RunDirError(f"output directory {out} is not writable")


def _lock(out: Path) -> int:
    try:
        fd = os.open(out / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunDirError(f"cannot write in output directory {out}: {exc.strerror}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise RunDirError(
            f"another run (pid {holder}) is writing {out}; wait for it to end or choose another -o"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _clear(out: Path) -> None:
    for entry in out.iterdir():
        if entry.name == LOCK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


@contextmanager
def claimed(out: Path, inputs: dict[str, Path | None], overwrite: bool = False) -> Iterator[Path]:
    """Holds OUT for one run: inputs outside it, no other run writing it, no earlier run's files in it.
    The lock file goes with the run (removed while still held); a directory made for a run that wrote
    nothing in it goes too."""
    check_inputs_outside(out, inputs)
    made = not out.exists()
    _make(out)
    fd = _lock(out)
    try:
        found = previous_outputs(out)
        if found and not overwrite:
            shown = ", ".join(found[:4]) + (", ..." if len(found) > 4 else "")
            raise RunDirError(
                f"{out} holds another run's outputs ({shown}); pass --overwrite to replace them, "
                "or choose another -o"
            )
        if found:
            _clear(out)
        yield out
    finally:
        _release(out, fd, made)


def _release(out: Path, fd: int, made: bool) -> None:
    try:
        (out / LOCK).unlink()
    except OSError:
        pass
    os.close(fd)
    if made:
        try:
            out.rmdir()  # only if empty: a run that failed before writing anything
        except OSError:
            pass
