"""Entry point for `python -m batkube_py.batsim_double` (see cli.py)."""

from .cli import run

run()
