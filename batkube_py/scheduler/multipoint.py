"""MultiPoint, as kube-scheduler's v1 config reads it: which extension points a plugin implements, how a
profile's enabled/disabled lists merge with the defaults (v1 mergePluginSet), and how MultiPoint plugins
expand into each extension point (frameworkImpl.expandMultiPointPlugins)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from batkube_py.scheduler.framework import Plugin

if TYPE_CHECKING:
    from batkube_py.scheduler.config import PluginRef, PluginSet


def points_of(cls: type[Plugin]) -> frozenset[str]:
    """The extension points a plugin implements: declared, or read off its flags and overrides."""
    declared = getattr(cls, "extension_points", None)
    if declared is not None:
        return frozenset(declared)
    out = set()
    if cls.filters:
        out.add("filter")
    if cls.scores:
        out.add("score")
    if cls.pre_filter is not Plugin.pre_filter:
        out.add("preFilter")
    if cls.pre_score is not Plugin.pre_score:
        out.add("preScore")
    return frozenset(out)


def merge(default: list[PluginRef], custom: PluginSet) -> tuple[list[PluginRef], set[str]]:
    """v1 mergePluginSet: defaults minus disabled ("*" = all), re-configured in place, then additions."""
    disabled = {p.name for p in custom.disabled}
    by_name = {p.name: (i, p) for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    out = []
    if "*" not in disabled:
        for p in default:
            if p.name in disabled:
                continue
            if p.name in by_name:
                i, p = by_name[p.name]
                replaced.add(i)
            out.append(p)
    out += [p for i, p in enumerate(custom.enabled) if i not in replaced]
    return out, disabled


def expand(point: str, merged: dict, classes: dict, where: str, errors: list[str]) -> list[str]:
    """frameworkImpl.expandMultiPointPlugins for one extension point."""
    enabled, disabled = merged[point]
    explicit = [p.name for p in enabled]
    dup = next((n for n in explicit if explicit.count(n) > 1), None)
    if dup is not None:
        errors.append(f'{where}.plugins.{point}: plugin "{dup}" already registered as "{point}"')
        return explicit
    if "*" in disabled:
        return explicit
    overrides, from_multi = [], []
    for ref in merged["multiPoint"][0]:
        cls = classes.get(ref.name)
        if cls is None or point not in points_of(cls) or ref.name in disabled:
            continue
        if ref.name in explicit:
            overrides.append(ref.name)
        elif ref.name in from_multi:
            errors.append(f'{where}.plugins.multiPoint: plugin "{ref.name}" already registered as "{point}"')
        else:
            from_multi.append(ref.name)
    first = [n for n in explicit if n in overrides]
    return first + from_multi + [n for n in explicit if n not in overrides]
