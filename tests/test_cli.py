"""The command lines as a whole: `-h` everywhere, help for every option, one spelling for outputs, and the
generators saying what they wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from batkube_py.cli.app import main
from swf_tools.cli import main as swf_main


def walk(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        yield (*path, name), cmd
        if isinstance(cmd, click.Group):
            yield from walk(cmd, (*path, name))


COMMANDS = [(main, p, c) for p, c in walk(main)] + [(swf_main, p, c) for p, c in walk(swf_main)]
IDS = [("batkube " if top is main else "swf-tools ") + " ".join(p) for top, p, _ in COMMANDS]


def test_the_walk_sees_every_command() -> None:
    names = {" ".join(p) for _, p, _ in COMMANDS}
    assert {"run", "serve", "platform", "workload", "analyze", "compare", "controlplane build",
            "experiment run", "extract", "convert"} <= names  # fmt: skip


@pytest.mark.parametrize("top", [main, swf_main], ids=["batkube", "swf-tools"])
def test_dash_h_on_the_top_commands(top: click.Group) -> None:
    result = CliRunner().invoke(top, ["-h"])
    assert result.exit_code == 0 and "Usage:" in result.output


@pytest.mark.parametrize(("top", "path", "cmd"), COMMANDS, ids=IDS)
def test_every_command_takes_dash_h_and_documents_every_option(top, path, cmd) -> None:
    result = CliRunner().invoke(top, [*path, "-h"])
    assert result.exit_code == 0 and "Usage:" in result.output, result.output
    for param in cmd.params:
        if isinstance(param, click.Option) and not param.hidden:
            assert param.help, f"{' '.join(path)} {'/'.join(param.opts)} has no help text"
        if isinstance(param, click.Option) and "-o" in param.opts:
            assert "--out" in param.opts, f"{' '.join(path)}: -o is spelled {param.opts}"


def test_scheduler_config_help_says_the_twin_honours_it() -> None:
    result = CliRunner().invoke(main, ["run", "-h"])
    assert "embedded twin honours it" in " ".join(result.output.split())


def test_platform_and_workload_refuse_nonsense_and_say_what_they_wrote(tmp_path: Path) -> None:
    runner = CliRunner()
    for args in (["platform", "-n", "2", "--cores", "0"], ["platform", "-n", "0"],
                 ["platform", "-n", "1", "--memory", "-1Gi"], ["workload", "burst", "--jobs", "0"],
                 ["workload", "spaced", "--delay", "0"], ["workload", "burst", "--cpu", "lots"]):  # fmt: skip
        result = runner.invoke(main, args)
        assert result.exit_code == 2 and "Invalid value" in result.output, (args, result.output)
    out = tmp_path / "p.xml"
    result = runner.invoke(main, ["platform", "-n", "3", "-c", "2", "-m", "4Gi", "-o", str(out)])
    assert result.exit_code == 0 and out.read_text().startswith("<?xml")
    assert f"wrote {out}: 3 node(s) of 2 cpu, memory 4Gi" in result.output
    # the old spelling still works, hidden from the help
    wl = tmp_path / "w.json"
    result = runner.invoke(main, ["workload", "spaced", "-n", "4", "--output", str(wl)])
    assert result.exit_code == 0 and len(json.loads(wl.read_text())["jobs"]) == 4
    assert f"wrote {wl}: 4 spaced job(s) of 170 s, submitted from 0 to 30 s" in result.output
    assert "--output" not in runner.invoke(main, ["workload", "-h"]).output


def test_swf_extract_help_names_a_trace_one_can_fetch():
    from batkube_py.inputs import datasets
    from swf_tools.cli import main as swf_main

    out = CliRunner().invoke(swf_main, ["extract", "--help"], terminal_width=200).output
    nasa = datasets.DATASETS["NASA-iPSC-1993-3.1-cln.swf"]
    assert nasa.url in out and "swf-tools extract NASA-iPSC-1993-3.1-cln.swf --period 10h" in out


def test_the_dask_executor_without_its_extra_names_the_extra(monkeypatch):
    import importlib.util

    from batkube_py.experiments import executors

    real = importlib.util.find_spec
    hide = lambda name, *args: None if name == "distributed" else real(name, *args)  # noqa: E731
    monkeypatch.setattr(importlib.util, "find_spec", hide)
    with pytest.raises(executors.ExecutorUnavailable, match=r"pip install 'batkube-py\[distributed\]'"):
        executors.make_executor("dask", 2)
    assert isinstance(executors.make_executor("local", 2), executors.LocalPool)


def test_figures_are_printed_in_fixed_notation():
    from batkube_py.cli.util import fixed

    # the NASA trace's makespan printed as 7.94902e+06
    assert [fixed(x) for x in (7949020.5512, 2210.414, 981.044376, 2.5e-5, 3)] == [
        "7949021", "2210.41", "981.044", "0.000025", "3"
    ]  # fmt: skip
