"""FlavorAssignmentMode: Kueue's representative mode of a flavor assignment, worst first."""

NO_FIT, PREEMPT, FIT = 0, 1, 3
