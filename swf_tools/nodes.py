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


def _radical_count(radical: str | None) -> int:
    """Hosts a SimGrid cluster's radical names ("0-127", "0-3,8-11")."""
    count = 0
    for part in (radical or "0-0").split(","):
        low, _, high = part.strip().partition("-")
        count += int(high or low) - int(low) + 1
    return count


def _compute_hosts(platform: Path) -> list[tuple[ET.Element, float, int]]:
    """(element, cores per host, hosts) of each compute host or cluster, the master left out."""
    try:
        root = ET.parse(platform).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ConversionError(f"{platform}: cannot read the platform ({exc})") from None
    found = []
    for element in root.iter():
        if element.tag not in ("host", "cluster"):
            continue
        props = _props(element)
        if props.get("role") == "master" or element.get("id", "").startswith("master"):
            continue
        value = props.get("core") or props.get("cpu") or "1"  # batkube's default: one core
        try:
            cores = quantities.milli_cpu(value) / 1000
            count = _radical_count(element.get("radical")) if element.tag == "cluster" else 1
        except (quantities.QuantityError, ValueError) as exc:
            raise ConversionError(f"{platform}: {element.tag} {element.get('id')!r}: {exc}") from None
        found.append((element, cores, count))
    if not found:
        raise ConversionError(f"{platform}: no compute host found")
    return found


def total_cores(platform: Path) -> float:
    """Every compute host's cores, summed: the capacity queue quotas share out."""
    return sum(cores * count for _, cores, count in _compute_hosts(platform))


def cores_per_node(platform: Path) -> float:
    found: dict[float, str] = {}
    for element, cores, _ in _compute_hosts(platform):
        found.setdefault(cores, element.get("id", "?"))
    if len(found) > 1:
        which = ", ".join(f"{c:g} ({h})" for c, h in sorted(found.items()))
        raise ConversionError(f"{platform}: compute hosts differ in cores ({which}); pass --cores-per-node")
    return next(iter(found))
