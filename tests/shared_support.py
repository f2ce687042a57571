"""The project's reference folder ../shared: present beside a developer's checkout and in CI, absent in a
user's fresh clone. A test that needs it calls ``shared(...)`` (or ``need(path)``, or is decorated with
``requires_shared(...)``): it skips with one reason naming what is missing, and fails instead when
``BATKUBE_REQUIRE_SHARED=1`` (CI), so a skip never passes for a test."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared(*parts: str) -> Path:
    """The path under ../shared, or skip (fail under CI) naming the missing file."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        why = f"needs ../shared/{'/'.join(parts)} (the project's reference folder, not in a fresh clone)"
        if os.environ.get("BATKUBE_REQUIRE_SHARED") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return path


def need(*paths: Path | str) -> None:
    """shared() for paths already built from SHARED; paths elsewhere are the test's own business."""
    for path in paths:
        path = Path(path)
        if path.is_relative_to(SHARED):
            shared(*path.relative_to(SHARED).parts)


def has_shared(*parts: str) -> bool:
    return SHARED.joinpath(*parts).exists()


def requires_shared(*parts: str):
    """Decorator: the test needs ../shared/<parts>; checked when it runs, so fixtures still apply."""

    def decorate(test):
        @functools.wraps(test)
        def checked(*args, **kwargs):
            shared(*parts)
            return test(*args, **kwargs)

        return checked

    return decorate


def shared_cases(parts: tuple[str, ...], listing=list) -> list:
    """Parameters `listing()` finds in a ../shared folder; when it is absent, one placeholder whose test
    must call shared(*parts) first, so that the missing folder is a skip (a failure in CI), not an empty
    parameter set."""
    return listing() if SHARED.joinpath(*parts).exists() else [pytest.param(None, id="no-shared")]


def real_batsim() -> Path:
    """../shared's real Batsim 4.2.1 (bin/batsim), ready to run: skip when ../shared is absent, and when its
    runtime Debian packages are missing (.ci/batsim.sh installs them); both fail under CI."""
    path = shared("batsim", "real-4.2.1", "bin", "batsim")
    try:
        ok = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        ok = ""
    if ok.strip() != "4.2.1":
        why = "real Batsim 4.2.1 does not run here: its runtime packages are missing (run .ci/batsim.sh)"
        if os.environ.get("BATKUBE_REQUIRE_SHARED") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return path
