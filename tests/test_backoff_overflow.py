"""A pod retried thousands of times (a long queue on a small cluster: 5,000 spaced jobs on 16 nodes) is at
the backoff cap; computing 2 ** (count - 1) as a float crashed the run with OverflowError after 1,024
attempts."""

from batkube_py.scheduler.backoffq import QueueConfig
from batkube_py.scheduler.versions import backoff_duration


def test_backoff_of_a_pod_tried_thousands_of_times_is_the_cap() -> None:
    for count in (1025, 5000, 10**6):
        assert backoff_duration(count, 1, 1.0, 10.0) == 10.0
        assert backoff_duration(count, 4, 1.0, 10.0) == 20.0
    assert backoff_duration(4, 1, 1.0, 10.0) == 8.0
    assert QueueConfig().retry_at(5000, 100.0) == 111.0  # 1.37: the 1-s window after 110 s
