"""The example inputs README's commands name (platforms/..., workloads/...), for a user without a clone.

A wheel holds no platforms/ or workloads/ folder, so README's first command would fail in an empty
folder. Those files are the generators' output (platforms/generate.sh, workloads/generate.sh): when a
path given to `-p` / `-w` does not exist but is one of them, batkube generates it with the same command
into its cache and uses that copy, saying so on the console, in batkube.log and in summary.json. A file
that exists is always used as it is.
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path
from typing import Any

import click

from batkube_py.controlplane import build

# path as README and the scripts name it -> the `batkube` command that writes it (generate.sh's)
EXAMPLES = {
    "platforms/cluster_16x1core.xml": ["platform", "--nodes", "16", "--cores", "1", "--memory", "4Gi"],
    "platforms/cluster_1x6core.xml": ["platform", "--nodes", "1", "--cores", "6", "--memory", "4Gi"],
    "platforms/cluster_1000x8core.xml": ["platform", "--nodes", "1000", "--cores", "8", "--memory", "32Gi"],
    "workloads/burst_200_delay170.json": [
        "workload", "burst", "--jobs", "200", "--delay", "170", "--cpu", "1",
    ],
    "workloads/spaced_200_delay170.json": [
        "workload", "spaced", "--jobs", "200", "--delay", "170", "--interval", "10", "--cpu", "1",
    ],
}  # fmt: skip
NOTES = "batkube.input_notes"  # the click context's meta key: what this command took from the package


def generate(name: str, dest: Path) -> None:
    """Writes example `name` to dest with its `batkube` command (the same bytes as the repository's)."""
    from batkube_py.cli.app import main

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}")
    with contextlib.redirect_stderr(io.StringIO()):  # its "wrote <temporary file>" line
        main.main([*EXAMPLES[name], "-o", str(tmp)], prog_name="batkube", standalone_mode=False)
    os.replace(tmp, dest)


def packaged(value: str, notes: list[str] | None = None) -> Path | None:
    """The packaged copy of the example `value` names, generated once into the cache; None if `value`
    names none. What was used is said on stderr and appended to `notes` (for the run's log)."""
    name = Path(value).as_posix().removeprefix("./")
    if name not in EXAMPLES:
        return None
    dest = build.cache_dir() / "examples" / name
    if not dest.is_file():
        generate(name, dest)
    line = (f"{value} is not in {Path.cwd()}: using batkube-py's packaged example {dest} (written by "
            f"`batkube {' '.join(EXAMPLES[name])}`)")  # fmt: skip
    click.echo(f"batkube: {line}", err=True)
    if notes is not None:
        notes.append(line)
    return dest


class InputFile(click.Path):
    """An existing input file, or one of README's example inputs when no such file is here."""

    def __init__(self) -> None:
        super().__init__(exists=True, dir_okay=False, path_type=Path)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str | Path) and not os.path.exists(value):
            notes = ctx.meta.setdefault(NOTES, []) if ctx is not None else None
            found = packaged(str(value), notes)
            if found is not None:
                return found
        return super().convert(value, param, ctx)
