"""Batsim 4.2.1 test double: a small Python Batsim peer for CI (see double.py, cli.py)."""

from .double import BatsimDouble, Outcome

__all__ = ["BatsimDouble", "Outcome"]
