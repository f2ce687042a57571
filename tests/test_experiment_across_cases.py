"""The racks experiment overlays its three cases (the same jobs placed anywhere, in one rack, flattened) in
one comparison, OUT/cases/, as its `table: across_cases` asks; experiments without it write none."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from batkube_py.cli.app import main
from batkube_py.experiments import spec

ROOT = Path(__file__).resolve().parents[1]
DOUBLE = str(ROOT / "tests" / "batsim_double" / "batsim")


def test_racks_overlays_its_three_cases(tmp_path: Path) -> None:
    assert spec.load(spec.locate("racks")).table.across_cases
    assert not spec.load(spec.locate("racks").with_name("gangs.yaml"), {"trace": "x"}).table.across_cases
    out = tmp_path / "o"
    args = ["experiment", "run", "racks", "-o", str(out), "--batsim", DOUBLE, "-r", "1", "-j", "2",
            "--no-progress", "--var", "jobs=12", "--var", "interval=2"]  # fmt: skip
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    cases = out / "cases"
    for name in ("compare_timeseries", "compare_waiting_time", "compare_bars"):
        assert (cases / f"{name}.png").stat().st_size > 0 and (cases / f"{name}.svg").exists()
    table = (cases / "comparison.md").read_text()
    header = table.splitlines()[0]
    assert all(f" {case} " in header for case in ("gang", "rack-constrained", "flat")), table
    assert "### all cases (cases/)" in (out / "report.md").read_text()
