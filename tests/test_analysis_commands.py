"""`batkube analyze` / `batkube compare` through click's CliRunner, figures and the thesis's Table 4.1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from matplotlib.testing.compare import compare_images
from PIL import Image
from shared_support import need, requires_shared

from batkube_py.analysis.commands import analyze, compare
from batkube_py.analysis.figures import node_gantt_figure
from batkube_py.analysis.loading import load_run

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
FIXTURES = ROOT / "tests" / "fixtures" / "analysis"
TINY = FIXTURES / "tiny_run"
REF = SHARED / "reference"
needs_shared = requires_shared("reference")


def _invoke(cmd, args: list[str]):
    return CliRunner().invoke(cmd, args)


def test_analyze_tiny_run_writes_metrics_and_figures(tmp_path: Path) -> None:
    result = _invoke(analyze, [str(TINY), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "cpu_over_allocations" in result.output
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["cpu_over_allocations"] == 1 and metrics["makespan"] == 20.0
    csv_text = (tmp_path / "metrics.csv").read_text()
    assert csv_text.startswith("metric,value\n") and "unschedulable_reason[Insufficient cpu],3" in csv_text
    for stem in ("job_gantt", "node_gantt", "utilisation", "waiting_time", "unschedulable_reasons"):
        png, svg = tmp_path / f"{stem}.png", tmp_path / f"{stem}.svg"
        assert png.stat().st_size > 1000 and svg.stat().st_size > 1000, stem
        assert Image.open(png).size == (1000, 600), stem
        assert svg.read_text().lstrip().startswith("<?xml")


def test_node_gantt_matches_reference_image(tmp_path: Path) -> None:
    """The stacked lanes and the red over-allocation band on the tiny fixture, within a tolerance."""
    fig = node_gantt_figure(load_run(TINY), 20.0, figsize=(4.0, 2.5))
    actual = tmp_path / "node_gantt_tiny.png"
    fig.savefig(actual, dpi=100)
    assert compare_images(str(FIXTURES / "node_gantt_tiny.png"), str(actual), tol=8) is None


def test_node_gantt_comparison_detects_missing_over_allocation(tmp_path: Path) -> None:
    """The tolerance is tight enough to notice the red band disappearing."""
    import matplotlib.pyplot as plt

    from batkube_py.analysis.node_gantt import plot_node_gantt

    run = load_run(TINY)
    fig, ax = plt.subplots(figsize=(4.0, 2.5))
    empty = pd.DataFrame(columns=["node", "start", "end", "used", "capacity"])
    plot_node_gantt(ax, run.pods[run.pods["bind_time"].notna()], run.nodes, empty)
    fig.tight_layout()
    actual = tmp_path / "no_band.png"
    fig.savefig(actual, dpi=100)
    plt.close(fig)
    assert compare_images(str(FIXTURES / "node_gantt_tiny.png"), str(actual), tol=8) is not None


def test_analyze_default_output_dir_and_no_figures(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(TINY, run)
    result = _invoke(analyze, [str(run), "--no-figures", "-q"])
    assert result.exit_code == 0, result.output
    assert result.output == ""
    assert sorted(p.name for p in (run / "analysis").iterdir()) == ["metrics.csv", "metrics.json"]


def test_analyze_missing_column_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "out_jobs.csv").write_text("job_id,submission_time\n1,0\n")
    result = _invoke(analyze, [str(tmp_path)])
    assert result.exit_code == 1
    assert "out_jobs.csv: missing column(s) starting_time, finish_time" in result.output
    assert "Traceback" not in result.output


def test_analyze_directory_without_jobs(tmp_path: Path) -> None:
    result = _invoke(analyze, [str(tmp_path)])
    assert result.exit_code == 1 and "out_jobs.csv is missing" in result.output


@needs_shared
def test_analyze_plain_batsim_run_with_platform(tmp_path: Path) -> None:
    case = SHARED / "batsim" / "transcripts" / "e_host_properties"
    need(case)
    result = _invoke(
        analyze,
        [
            str(case / "out"),
            "-o",
            str(tmp_path),
            "--platform",
            str(case / "platform.xml"),
            "--workload",
            str(case / "workload.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    assert (tmp_path / "node_gantt.png").exists()
    assert json.loads((tmp_path / "metrics.json").read_text())["cpu_utilisation"] > 0


@needs_shared
def test_analyze_thesis_emulated_csv(tmp_path: Path) -> None:
    """Extra scheduled/pulling/pulled/created columns and missing allocations (k3s runs) are fine."""
    result = _invoke(analyze, [str(REF / "emulated" / "200_delay170_0_jobs.csv"), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["jobs_total"] == 200 and metrics["cpu_utilisation"] is None
    assert any("no allocated_resources" in n for n in metrics["notes"])
    assert Image.open(tmp_path / "job_gantt.png").size == (1000, 600)


TABLE_4_1 = [
    # (emulated glob, simulated glob, expected makespan row, expected mean waiting time row)
    (
        "200_delay170_*_jobs.csv",
        "200_delay170_simu_*_jobs.csv",
        "2467.2 ± 26.8",
        "2214.8",
        "1076.7 ± 10.0",
        "970.1",
    ),
    (
        "spaced_200_delay170_*_jobs.csv",
        "spaced_200_delay170_simu_*_jobs.csv",
        "2468.3 ± 4.9",
        "2256.9",
        "146.0 ± 1.6",
        "48.1",
    ),
    ("KIT_0_jobs.csv", "KIT_10h_80_simu_*_jobs.csv", "32556.2", "32554.7", "2884.3", "2020.1 ± 926.4"),
]


@needs_shared
@pytest.mark.parametrize(
    "emu, simu, ms_emu, ms_sim, wait_emu, wait_sim", TABLE_4_1, ids=["burst", "spaced", "KIT"]
)
def test_compare_reproduces_thesis_table_4_1(emu, simu, ms_emu, ms_sim, wait_emu, wait_sim) -> None:
    result = _invoke(
        compare,
        [
            "--group",
            "emulated",
            str(REF / "emulated" / emu),
            "--group",
            "batkube",
            str(REF / "batkube-simulated" / simu),
            "-m",
            "makespan",
            "-m",
            "mean_waiting_time",
            "-f",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    result_md = _invoke(
        compare,
        [
            str(REF / "emulated" / emu),
            str(REF / "batkube-simulated" / simu),
            "--labels",
            "emulated,batkube",
            "-m",
            "makespan",
            "-m",
            "mean_waiting_time",
            "-f",
            "markdown",
        ],
    )
    assert result_md.exit_code == 0, result_md.output
    rows = {
        line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
        for line in result_md.output.splitlines()[2:]
    }
    assert rows["makespan"][0] == ms_emu and rows["makespan"][1].startswith(ms_sim)
    assert rows["mean_waiting_time"][0] == wait_emu and rows["mean_waiting_time"][1].startswith(wait_sim)


@needs_shared
def test_compare_writes_tables_and_overlays(tmp_path: Path) -> None:
    result = _invoke(
        compare,
        [
            str(REF / "emulated" / "spaced_200_delay170_*_jobs.csv"),
            str(TINY),
            "-l",
            "emulated",
            "-l",
            "tiny",
            "-o",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Δ tiny − emulated" in result.output
    csv_text = (tmp_path / "comparison.csv").read_text()
    assert csv_text.splitlines()[0].startswith("metric,emulated_mean,emulated_sd,emulated_n,tiny_mean")
    assert "emulated_n" in csv_text and ",10," in csv_text
    assert (tmp_path / "comparison.md").read_text().startswith("| metric | emulated | tiny |")
    for stem in ("compare_waiting_time", "compare_timeseries", "compare_bars"):
        assert Image.open(tmp_path / f"{stem}.png").size == (1000, 600)
        assert (tmp_path / f"{stem}.svg").stat().st_size > 1000


def test_compare_errors_are_clean(tmp_path: Path) -> None:
    r = _invoke(compare, [str(tmp_path / "nothing_*.csv")])
    assert r.exit_code == 1 and "matches no file" in r.output
    r = _invoke(compare, [str(TINY), str(TINY), "--labels", "only-one"])
    assert r.exit_code == 1 and "--labels gives 1 label(s) for 2" in r.output
    r = _invoke(compare, [str(TINY), "-m", "bogus"])
    assert r.exit_code == 1 and "unknown metric(s) bogus" in r.output
    r = _invoke(compare, [])
    assert r.exit_code == 1 and "nothing to compare" in r.output


def test_compare_same_label_merges_repetitions() -> None:
    r = _invoke(compare, ["--group", "a", str(TINY), "--group", "a", str(TINY), "-m", "makespan"])
    assert r.exit_code == 0, r.output
    assert "20.0 ± 0.0" in r.output


def test_bad_decisions_and_pods_are_clean_errors(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(TINY, run)
    (run / "decisions.jsonl").write_text('{"result": "bound"}\nnot json\n')
    r = _invoke(analyze, [str(run), "--no-figures"])
    assert r.exit_code == 1 and "decisions.jsonl: line 2 is not valid JSON" in r.output
    (run / "decisions.jsonl").unlink()
    (run / "pods.csv").write_text("job_id,node\nw0!1,node-a\n")
    r = _invoke(analyze, [str(run), "--no-figures"])
    assert r.exit_code == 1 and "pods.csv: missing column(s) cpu_request, bind_time" in r.output
