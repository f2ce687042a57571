import sys
from pathlib import Path

# The Batsim test double lives in tests/batsim_double and is imported as `batsim_double`.
_TESTS_DIR = str(Path(__file__).resolve().parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)
