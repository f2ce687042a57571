"""One run of the adapter beside Batsim: the ZeroMQ endpoint, the run directory, the transcript and the
process usage. Called by cli/ and experiments/; calls adapter/ and cluster/."""
