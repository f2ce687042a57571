"""Cores per node of a batkube platform, for `convert` keeping node counts.

batkube reads a node's cpu from its host's `core` property (or `cpu`), never from SimGrid's own `core`
attribute, so that is what is read here; every compute host (role other than master) must agree.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from batkube_py import quantities
from swf_tools.errors import ConversionError


def _props(element: ET.Element) -> dict[str, str]:
    return {p.get("id", ""): p.get("value", "") for p in element.findall("prop")}


def cores_per_node(platform: Path) -> float:
    try:
        root = ET.parse(platform).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ConversionError(f"{platform}: cannot read the platform ({exc})") from None
    found: dict[float, str] = {}
    for element in root.iter():
        if element.tag not in ("host", "cluster"):
            continue
        props = _props(element)
        if props.get("role") == "master" or element.get("id", "").startswith("master"):
            continue
        value = props.get("core") or props.get("cpu") or "1"  # batkube's default: one core
        try:
            cores = quantities.milli_cpu(value) / 1000
        except quantities.QuantityError as exc:
            raise ConversionError(f"{platform}: {element.tag} {element.get('id')!r}: core {exc}") from None
        found.setdefault(cores, element.get("id", "?"))
    if not found:
        raise ConversionError(f"{platform}: no compute host found")
    if len(found) > 1:
        which = ", ".join(f"{c:g} ({h})" for c, h in sorted(found.items()))
        raise ConversionError(f"{platform}: compute hosts differ in cores ({which}); pass --cores-per-node")
    return next(iter(found))
