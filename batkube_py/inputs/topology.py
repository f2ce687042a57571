"""SimGrid zones and clusters as node topology labels, read from the platform file.

Batsim forwards a host's properties but not where the host sits in the platform, so `batkube run`
reads the platform itself: every compute host gets `batkube.io/zone` = the id of the innermost `<zone>`
around it and, for a host a `<cluster>` generates, `batkube.io/cluster` = that cluster's id. A job's
`groupTopology` can then name either key to keep its pod group inside one zone or one cluster (one
rack, on platforms that model racks as clusters). A host property of the same name wins.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

ZONE_LABEL = "batkube.io/zone"
CLUSTER_LABEL = "batkube.io/cluster"


class PlatformError(ValueError):
    pass


def _radical(text: str, where: str) -> list[int]:
    out: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, sep, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
        except ValueError:
            raise PlatformError(f"{where}: radical {text!r} is not like '0-3,5'") from None
    return out


def read_platform(platform: Path) -> ET.Element:
    """The platform's root element; refused in one line when the file is not a SimGrid XML platform
    (a workload given as -p is the usual cause), before Batsim aborts on it."""
    try:
        root = ET.parse(platform).getroot()
    except OSError as exc:
        raise PlatformError(f"cannot read platform {platform}: {exc.strerror}") from None
    except ET.ParseError as exc:
        json_like = platform.read_bytes()[:64].lstrip()[:1] in (b"{", b"[")
        what = "it reads as JSON (a workload?)" if json_like else f"XML {exc}"
        raise PlatformError(f"{platform}: not a SimGrid XML platform (swapped -p/-w?): {what}") from None
    if root.tag != "platform":
        raise PlatformError(
            f"{platform}: not a SimGrid XML platform (swapped -p/-w?): its root element is <{root.tag}>, "
            "not <platform>"
        )
    return root


def host_labels(platform: Path) -> dict[str, dict[str, str]]:
    """Host name → its topology labels, for every host and cluster-generated host of the platform."""
    root = read_platform(platform)
    labels: dict[str, dict[str, str]] = {}

    def walk(element: ET.Element, zone: str | None) -> None:
        for child in element:
            tag, ident = child.tag, child.get("id", "")
            if tag in ("zone", "AS"):  # AS: the name of zones before SimGrid 3.16
                walk(child, ident or zone)
            elif tag == "host" and ident:
                labels[ident] = {ZONE_LABEL: zone} if zone else {}
            elif tag == "cluster" and ident:
                where = f"{platform}: cluster {ident!r}"
                for n in _radical(child.get("radical", ""), where):
                    name = f"{child.get('prefix', '')}{n}{child.get('suffix', '')}"
                    labels[name] = {CLUSTER_LABEL: ident, **({ZONE_LABEL: zone} if zone else {})}

    walk(root, None)
    return labels
