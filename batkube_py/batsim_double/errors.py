"""Failure modes of Batsim that the double reproduces.

`BatsimAbort` models an `xbt_assert` failure (SIGABRT, exit 134, empty outputs);
`BatsimRuntimeError` models the std::runtime_error path of network.cpp, where Batsim
flushes its outputs before aborting (still exit 134).
"""

from __future__ import annotations


class BatsimAbort(Exception):
    """`raw`: a library's own assertion (glibc's assert), printed as is rather than as Batsim's log line;
    `exception`: a C++ exception nobody catches (SimGrid logs it as `Uncaught exception <exception>: ...`)."""

    def __init__(self, message: str, where: str = "", raw: bool = False, exception: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.raw = raw
        self.exception = exception


class BatsimRuntimeError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BatsimCrash(Exception):
    """Batsim dies of a signal (SIGSEGV): undefined behaviour in its C++, reproduced where it is certain."""

    def __init__(self, message: str = "Segmentation fault.") -> None:
        super().__init__(message)
        self.message = message


def check(cond: bool, message: str, where: str = "") -> None:
    if not cond:
        raise BatsimAbort(message, where)
