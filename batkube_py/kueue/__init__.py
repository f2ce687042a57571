"""A twin of Kueue v0.17.0's admission, on the simulated clock (docs/concepts/queues.md).

Shaped like Kueue: `queue/` is pkg/cache/queue (a heap per ClusterQueue, the inadmissible set, the
manager), `cache/` is pkg/cache/scheduler (quota trees of ClusterQueues and Cohorts, the per-cycle
snapshot), `scheduler/` is pkg/scheduler (the cycle, flavor assignment, classical preemption), and
`twin.py` wires them as Kueue's main does. The embedded backend drives it through cluster/admission.py.
"""
