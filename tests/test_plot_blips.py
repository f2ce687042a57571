"""The queue-length panel of a long spaced run is not a comb: Batsim's clock drifts a little per message, so
the start a completion allows comes later and later after the submission of the same instant (0.11 s at
700 s), past the 0.1-s instant; spikes narrower than a pixel are not drawn, ramps and plateaus are."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from batkube_py.analysis import metrics as m
from batkube_py.analysis.compare import Group
from batkube_py.analysis.compare_figures import overlay_timeseries
from batkube_py.analysis.figures import utilisation_figure
from batkube_py.analysis.loading import Run


def _drifting_spaced(n: int = 200) -> pd.DataFrame:
    """One job every 10 s, each started 0.0024 s + 1 ms per earlier job after its submission."""
    sub = 10.0 * np.arange(n)
    start = sub + 0.0024 + 0.001 * np.arange(n)
    return pd.DataFrame({"job_id": [f"w0!{i}" for i in range(n)], "submission_time": sub,
                         "starting_time": start, "finish_time": start + 5, "allocated_resources": "0",
                         "state": "succeeded"})  # fmt: skip


def test_a_drifting_spaced_queue_draws_no_spikes() -> None:
    jobs = _drifting_spaced()
    assert m.instant_ends(m.queue_series(jobs))["value"].max() == 1.0  # the comb the 0.1-s instants leave
    assert set(m.plotted(m.queue_series(jobs))["value"]) == {0.0}
    run = Run(source=Path("spaced"), jobs=jobs)
    for fig in (overlay_timeseries([Group("spaced", [run])]), utilisation_figure(run, 2000.0)):
        queued = fig.axes[1].lines[0].get_ydata()
        plt.close(fig)
        assert max(queued) == 0.0


def test_short_steps_of_a_ramp_and_real_waits_are_kept() -> None:
    ramp = pd.DataFrame({"time": [0.0, 0.001, 0.002, 0.003, 1000.0], "value": [1.0, 2.0, 3.0, 4.0, 0.0]})
    assert m.without_blips(ramp, 1.0).equals(ramp)
    wait = pd.DataFrame({"time": [0.0, 100.0, 150.0, 1000.0], "value": [0.0, 1.0, 0.0, 0.0]})
    assert m.without_blips(wait, 1.0)["value"].tolist() == [0.0, 1.0, 0.0, 0.0]
    dip = pd.DataFrame({"time": [0.0, 500.0, 500.2, 1000.0], "value": [3.0, 2.0, 3.0, 0.0]})
    assert m.without_blips(dip, 1.0).to_dict("list") == {"time": [0.0, 1000.0], "value": [3.0, 0.0]}
