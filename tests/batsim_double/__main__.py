"""Entry point for `python -m batsim_double` (see cli.py)."""

from .cli import run

run()
