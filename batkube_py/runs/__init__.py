"""One run of the adapter beside Batsim: the ZeroMQ endpoint, the run directory, the transcript and the
process usage. Called by cli/ and experiments/; calls adapter/ and cluster/."""


class RunError(RuntimeError):
    """A run cannot go on: its message is the one line the user sees."""
