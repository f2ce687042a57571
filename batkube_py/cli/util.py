"""What every command line of the distribution (`batkube`, `swf-tools`) shares: `-h`, and one spelling of
the output option (`-o/--out`), so that a user who learnt one command does not trip on the next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

CONTEXT = {"help_option_names": ["-h", "--help"]}


def fixed(value: object) -> str:
    """A figure as a user reads it, to 6 significant digits but never in exponent notation: 2210.41,
    7949021 (not 7.94902e+06), 0.000025."""
    if isinstance(value, float):
        text = f"{value:.6g}"
        if "e" in text:
            text = f"{value:.0f}" if abs(value) >= 1 else f"{value:.6f}".rstrip("0").rstrip(".")
        return "0" if text in ("-0", "") else text
    return str(value)


class AliasOption(click.Option):
    """An option whose older spellings still work but are left out of --help (one name to learn)."""

    def __init__(self, *args: Any, hidden_aliases: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hidden_aliases = hidden_aliases

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        shown, self.opts = self.opts, [o for o in self.opts if o not in self.hidden_aliases]
        try:
            return super().get_help_record(ctx)
        finally:
            self.opts = shown


def out_option(help: str, *, dir_okay: bool = True, **kwargs: Any):
    """`-o/--out PATH`; `--output`, the name some commands used before, is a hidden alias."""
    return click.option(
        "--out", "-o", "--output", "out", cls=AliasOption, hidden_aliases=("--output",),
        type=click.Path(path_type=Path, dir_okay=dir_okay), help=help, **kwargs,
    )  # fmt: skip


class Quantity(click.ParamType):
    """A positive Kubernetes cpu or memory quantity, kept as typed (it goes into files as written)."""

    name = "quantity"

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from batkube_py import quantities

        parse = quantities.milli_cpu if self.kind == "cpu" else quantities.byte_count
        try:
            amount = parse(str(value))
        except quantities.QuantityError as exc:
            self.fail(str(exc), param, ctx)
        if amount <= 0:
            self.fail(f"{self.kind} must be more than 0, got {value!r}", param, ctx)
        return str(value)


def short_help_everywhere(cmd: click.Command) -> click.Command:
    """`-h` on `cmd` and every subcommand, even one invoked on its own first (click caches each command's
    help option from the first context it sees, so inheriting from the group is not enough)."""
    cmd.context_settings.setdefault("help_option_names", CONTEXT["help_option_names"])
    for sub in getattr(cmd, "commands", {}).values():
        short_help_everywhere(sub)
    return cmd
