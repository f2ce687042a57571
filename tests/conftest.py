"""Shared pytest configuration.

The experiments fetch their public inputs by name (inputs.datasets): tests never download, they read
the project's reference folder ../shared when it is there (the offline folder CI uses too)."""

import os
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared"

os.environ["BATKUBE_OFFLINE"] = "1"
if SHARED.is_dir():
    os.environ.setdefault("BATKUBE_DATA_DIR", str(SHARED))
