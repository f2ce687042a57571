"""The project's reference folder ../shared: present beside a developer's checkout and in CI, absent in a
user's fresh clone. A test that needs it calls ``shared(...)``: it skips with one reason naming what is
missing, and fails instead when ``BATKUBE_REQUIRE_SHARED=1`` (CI), so a skip never passes for a test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared(*parts: str) -> Path:
    """The path under ../shared, or skip (fail under CI) naming the missing file."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        why = f"needs ../shared/{'/'.join(parts) or ''} (the project's reference folder, not in a fresh clone)"
        if os.environ.get("BATKUBE_REQUIRE_SHARED") == "1":
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return path


def has_shared(*parts: str) -> bool:
    return SHARED.joinpath(*parts).exists()
