"""Victims of equal importance, in kube-scheduler's node cache order (1.37.2).

SelectVictimsOnNode takes the node's pods in NodeInfo.Pods order and sorts them with sort.Slice by
MoreImportantVictim (priority, then start time): equal pods keep their cache order (insertion sort below
13 elements). That order is not creation order: the cache appends a pod it adds, fills the gap a removed
pod leaves with the last pod (NodeInfo.RemovePod), and an update (a status write) is a removal and an add.
"""

from __future__ import annotations

from test_kube137 import cluster
from test_nominated import placed, submit
from test_plugins_common import pod, table


def test_the_order_is_upstreams_nodeinfo_pods_order():
    t = table({"cpu": "8"})
    pods = {n: pod(n, cpu="1") for n in "abcde"}
    for p in pods.values():
        t.assume(0, p)
    assert t.order[0] == list("abcde")
    t.release(0, pods["b"])  # the last pod fills the gap
    assert t.order[0] == list("aecd")
    t.touch(0, pods["a"])  # an update: removed, then added
    assert t.order[0] == list("deca")
    t.take_off(0, pods["e"])  # a dry run leaves the order alone
    t.restore(0, pods["e"])
    assert t.order[0] == list("deca") and [t.rank(pods[n]) for n in "deca"] == [0, 1, 2, 3]


def test_equal_victims_are_reprieved_in_cache_order_not_creation_order():
    """t=0: x (priority 20) fills n1, a b c d (priority 0, cpu 2 1 1 1) fill n0, bound in that order.
    Two priorities exist, so the kubelet writes their startTime after the step in binding order, each
    write moving the pod last: n0's order goes a b c d → c a b d. t=1: b ends; d fills its gap: c a d.
    t=2: hi (priority 10, cpu 3) must preempt on n0; reprieving in cache order keeps c and d and evicts
    a alone; in creation order (a c d) it would keep a and evict c and d."""
    c = cluster("1.37", {"cpu": "5"}, {"cpu": "1", "pin": "x"})
    submit(c, "x", 0.0, cpu="1", priority=20, nodeSelector={"pin": "x"})
    for name, cpu in zip("abcd", ("2", "1", "1", "1"), strict=True):
        submit(c, name, 0.0, cpu=cpu)
    assert placed(c, 0.0) == {"x": "n1", "a": "n0", "b": "n0", "c": "n0", "d": "n0"}
    assert c.nodes.order[0] == list("cabd")
    c.delete_pod("b", 1.0)
    assert c.nodes.order[0] == list("cad")
    submit(c, "hi", 2.0, cpu="3", priority=10)
    assert placed(c, 2.0) == {}
    assert [e.pod for e in c.take_evictions()] == ["a"]
    assert c.pods["hi"].nominated_node == 0


def test_more_than_12_victims_are_sorted_as_go_sorts_them():
    """Above 12 elements sort.Slice is pdqsort, not stable: 13 victims with priorities 2 - key (key as in
    fixtures/go_sort_slice.txt, n=13, mod 3), all started in the same second, in cache order 0..12, come
    out in the order go1.26.8 gave: equal ones no longer in cache order."""
    from batkube_py.scheduler.preemption import more_important_first

    t = table({"cpu": "16"})
    key = [(31 * i * i + 7919 * i + 104729) % 3 for i in range(13)]
    pods = [pod(f"v{i}", cpu="1", priority=2 - key[i]) for i in range(13)]
    for p in pods:
        t.assume(0, p)
    got = [int(p.name[1:]) for p in more_important_first(t, list(reversed(pods)))]
    assert got == [5, 11, 2, 8, 6, 4, 0, 7, 3, 9, 10, 1, 12]
    assert got != sorted(range(13), key=lambda i: key[i])  # not the stable order
