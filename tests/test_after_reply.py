"""What the decision process leaves until its reply has left (DecisionProcess.after_reply), and the
per-shape shortcuts of admission: none of it may change a reply or an output."""

import gc

from batsim_messages import begins, completed, host, message, reply_events, requested_call, submitted

from batkube_py.adapter import podshape
from batkube_py.adapter.decision import DecisionProcess
from batkube_py.adapter.instant import DECISION_DELAY
from batkube_py.adapter.outputs import RunOutputs
from batkube_py.cluster.embedded import EmbeddedCluster

PROFILES = {
    "p": {"type": "delay", "delay": 10, "cpu": "1"},
    "big": {"type": "delay", "delay": 5, "cpu": "64"},
}


def started(tmp_path):
    p = DecisionProcess(lambda nodes: EmbeddedCluster(nodes, seed=0), RunOutputs(tmp_path))
    p.handle(message(0.0, begins([host(0, core="2"), host(1, core="2")], PROFILES)))
    p.after_reply()
    return p


def test_a_pod_is_built_after_the_reply_that_admitted_it_and_is_the_one_scheduled(tmp_path):
    p = started(tmp_path)
    p.handle(message(1.0, submitted(1.0, "w0!1")))
    (to_build,) = p._to_build
    assert to_build._pod is None  # not on the path Batsim waits on
    p.after_reply()
    built = to_build._pod
    assert built is not None and not p._to_build
    direct = podshape.pod_from_job("w0!1", {"id": "w0!1", "subtime": 1.0, "res": 1, "profile": "p"},
                                   PROFILES["p"], "w0-1")  # fmt: skip
    assert built == direct
    t = 1.0 + DECISION_DELAY
    out = reply_events(p.handle(message(t, requested_call(t))))
    assert [e[0] for e in out] == ["EXECUTE_JOB"]
    assert p.backend.pods["w0-1"].pod is built


def test_a_pod_a_cycle_needs_before_the_reply_left_is_built_on_the_spot(tmp_path):
    p = started(tmp_path)
    p.handle(message(1.0, submitted(1.0, "w0!1")))
    t = 1.0 + DECISION_DELAY  # no after_reply in between, as when one message carries both
    out = reply_events(p.handle(message(t, requested_call(t))))
    assert [e[0] for e in out] == ["EXECUTE_JOB"]
    assert p.backend.pods["w0-1"].pod.metadata.name == "w0-1"


def test_final_rows_reach_pods_csv_once_the_reply_has_left_and_at_close(tmp_path):
    p = started(tmp_path)
    p.handle(message(1.0, submitted(1.0, "w0!1"), submitted(1.0, "w0!2")))
    t = 1.0 + DECISION_DELAY
    p.handle(message(t, requested_call(t)))
    p.after_reply()
    rows = lambda: (tmp_path / "pods.csv").read_text().splitlines()[1:]  # noqa: E731
    p.handle(message(12.0, completed(12.0, "w0!1", "0")))
    assert rows() == []
    p.after_reply()
    assert [r.split(",")[0] for r in rows()] == ["w0!1"]
    p.handle(message(13.0, completed(13.0, "w0!2", "1")))
    p.outputs.close()  # a run that stops between a reply and its after_reply keeps the row
    assert [r.split(",")[0] for r in rows()] == ["w0!1", "w0!2"]


def test_admission_asks_the_cluster_once_per_admitted_shape_and_rejects_every_too_big_job(tmp_path):
    p = started(tmp_path)
    asked = []
    fits = p.backend.fits_empty_cluster
    p.backend.fits_empty_cluster = lambda pod: asked.append(pod) or fits(pod)
    jobs = [submitted(1.0, f"w0!{i}", "big" if i % 2 else "p") for i in range(1, 7)]
    out = reply_events(p.handle(message(1.0, *jobs)))
    assert [e[1]["job_id"] for e in out if e[0] == "REJECT_JOB"] == ["w0!1", "w0!3", "w0!5"]
    assert len(asked) == 4  # three big jobs, one admitted shape
    assert len((tmp_path / "rejected.csv").read_text().splitlines()) == 4


def test_admitted_shapes_are_remembered_only_while_in_use(tmp_path):
    p = started(tmp_path)
    jobs = [submitted(1.0, f"w0!{i}", "p", cpu="500m") for i in range(1, 4)]  # fields of their own
    jobs += [submitted(1.0, f"w0!{i}") for i in range(4, 7)]
    p.handle(message(1.0, *jobs))
    t = 1.0 + DECISION_DELAY
    p.handle(message(t, requested_call(t)))  # every pod built and added: the job shapes are let go
    p.after_reply()
    gc.collect()
    assert list(p._admitted) == [podshape.pod_shape("w0!4", {"res": 1, "profile": "p"}, PROFILES["p"])]
