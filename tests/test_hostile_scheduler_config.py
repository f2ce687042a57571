"""Hostile KubeSchedulerConfiguration files (issue 18): the scheduler-config loaders are bounded like every
user YAML (batkube_py.safeyaml), so an alias bomb or a 10,000-level nesting ends in one line naming the
file, through the CLI, with no traceback and no run started."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from batkube_py.cli.app import main
from batkube_py.controlplane.manager import ControlPlaneError
from batkube_py.controlplane.session import scheduler_facts

pytestmark = pytest.mark.timeout(60)
ROOT = Path(__file__).resolve().parents[1]
PLATFORM = ROOT / "platforms" / "cluster_16x1core.xml"
WORKLOAD = ROOT / "workloads" / "burst_200_delay170.json"

_HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
_BOMB = _HEAD + "a: &a [x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(20)
)
HOSTILE = {
    "alias-bomb": (_BOMB, "expand"),
    "deep-10000": ("profiles: " + "[" * 10_000 + "]" * 10_000, "nested"),
    "deep-mapping": ("a:\n" + "".join(" " * i + "b:\n" for i in range(1, 2000)), "nested"),
    "non-utf8": (b"kind: \xff\xfe\n", "UTF-8"),
}


def _file(tmp_path: Path, kind: str) -> Path:
    text = HOSTILE[kind][0]
    f = tmp_path / "sched.yaml"
    f.write_bytes(text if isinstance(text, bytes) else text.encode())
    return f


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_run_refuses_a_hostile_scheduler_config_in_one_line(tmp_path: Path, kind: str) -> None:
    f = _file(tmp_path, kind)
    out = tmp_path / "out"
    args = ["run", "-p", PLATFORM, "-w", WORKLOAD, "-o", out, "--batsim", "double", "--scheduler-config", f]
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code != 0
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert "Traceback" not in r.output
    errors = [line for line in r.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and str(f) in errors[0] and HOSTILE[kind][1] in errors[0], r.output
    assert not (out / "pods.csv").exists()


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_the_real_scheduler_path_reads_the_same_bounded_way(tmp_path: Path, kind: str) -> None:
    with pytest.raises(ControlPlaneError, match=HOSTILE[kind][1]):
        scheduler_facts(_file(tmp_path, kind))
