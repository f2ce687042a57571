#!/usr/bin/env python3
"""Writes docs/reference/cli.md from the commands themselves: the click trees of `batkube` and
`swf-tools`, and `batsim-double`'s usage text. The page cannot drift from the code: CI runs this with
`--check`, which fails when the checked-in page differs from what the code says.

    python scripts/cli_reference.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import click

OUT = Path(__file__).resolve().parents[1] / "docs" / "reference" / "cli.md"
WIDTH = 100  # fixed, so the page does not depend on the terminal it was generated in

HEADER = """# Command-line reference

Generated from the commands' own help by `python scripts/cli_reference.py` (CI checks that this page is
up to date). Every command also answers `-h` / `--help`. Three programs are installed: `batkube` (runs,
analysis, experiments, the control plane), `swf-tools` (Parallel Workloads Archive traces to Batsim
workloads) and `batsim-double` (the project's Batsim 4.2.1 double, which takes Batsim's command line).
"""


def _commands(cmd: click.Command, path: list[str], parent: click.Context | None) -> Iterator[tuple]:
    ctx = click.Context(
        cmd, info_name=path[-1], parent=parent, terminal_width=WIDTH, max_content_width=WIDTH,
        **cmd.context_settings,
    )  # fmt: skip
    yield path, cmd.get_help(ctx)
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, [*path, name], ctx)


def render() -> str:
    from batkube_py.batsim_double.usage import help_text
    from batkube_py.cli.app import main as batkube
    from swf_tools.cli import main as swf_tools

    parts = [HEADER]
    for root, name in ((batkube, "batkube"), (swf_tools, "swf-tools")):
        for path, text in _commands(root, [name], None):
            level = "#" * min(len(path) + 1, 4)
            parts.append(f"{level} `{' '.join(path)}`\n\n```text\n{text.rstrip()}\n```\n")
    parts.append(f"## `batsim-double`\n\n```text\n{help_text().rstrip()}\n```\n")
    return "\n".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="fail if docs/reference/cli.md is out of date")
    args = ap.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            sys.exit(f"{OUT} is out of date: run python scripts/cli_reference.py and commit it")
        print(f"{OUT.name}: up to date")
        return
    OUT.write_text(text)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
