"""`batkube experiment run` never replaces a successful run with a failed one (issue 15): without a usable
Batsim it refuses before touching anything; with a Batsim that fails, the re-run happens beside the good
run, which stays (files, result, table) while the failed attempt is kept apart for inspection."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from batkube_py.cli.app import main

ROOT = Path(__file__).resolve().parents[1]


def _experiment(tmp_path: Path) -> Path:
    f = tmp_path / "e.yaml"
    f.write_text(
        f"name: e\ncases: [{{name: c, platform: {ROOT / 'platforms' / 'cluster_16x1core.xml'}, "
        f"workload: {ROOT / 'workloads' / 'burst_200_delay170.json'}}}]\nvariants: [{{name: v}}]\n"
    )
    return f


def _run(f: Path, out: Path, batsim: str) -> tuple[int, str]:
    r = CliRunner().invoke(
        main, ["experiment", "run", str(f), "-o", str(out), "--batsim", batsim, "--no-progress"]
    )
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    return r.exit_code, r.output


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


def test_a_failed_rerun_keeps_the_successful_run(tmp_path: Path) -> None:
    f, out = _experiment(tmp_path), tmp_path / "out"
    code, output = _run(f, out, "double")
    assert code == 0, output
    run = out / "runs" / "c" / "v" / "rep0"
    good = _snapshot(run)
    assert json.loads(good["result.json"])["status"] == "ok" and b"Succeeded" in good["pods.csv"]
    table = (out / "table.md").read_text()
    assert "2210.3 / 979.4" in table  # the twin as kube-scheduler 1.37.2 (1.32.6: 2210.4 / 981.0)

    # no Batsim at all: refused before anything is planned or touched
    code, output = _run(f, out, str(tmp_path / "no-such-batsim"))
    assert code != 0 and "no-such-batsim" in output and "Traceback" not in output
    assert _snapshot(run) == good and (out / "table.md").read_text() == table

    # a Batsim that starts and fails: another command line, so the run is redone, beside the good one
    broken = tmp_path / "batsim"
    broken.write_text("#!/bin/sh\necho 'batsim: simulated crash' >&2\nexit 3\n")
    broken.chmod(0o755)
    code, output = _run(f, out, str(broken))
    assert "kept the earlier successful run" in output, output
    assert _snapshot(run) == good, "the successful run's files were replaced or emptied"
    assert (
        "2210.3 / 979.4" in (out / "table.md").read_text() and "failed" not in (out / "table.md").read_text()
    )
    failed = run.with_name("rep0.failed")
    assert json.loads((failed / "result.json").read_text())["status"] == "failed"
