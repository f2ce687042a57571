"""SimGrid platform subset: hosts, properties, roles and route latencies.

Batsim's internal messages are SimGrid communications, so their duration is the
sum of the link latencies on the route between the two actors' hosts (message
sizes are tiny, the bandwidth term is below the 1e-6 s printed precision).
Only the constructs used by Batsim test platforms are supported: nested
zones/ASes with Full routing, <host>, <cluster>, <link>, <route>, <zoneRoute>/<ASroute>.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0, "h": 3600.0,
          "d": 86400.0, "w": 604800.0}
_SPEED_UNITS = {"f": 1.0, "kf": 1e3, "mf": 1e6, "gf": 1e9, "tf": 1e12, "pf": 1e15, "ef": 1e18}


class PlatformError(Exception):
    """Raised for platforms Batsim itself would refuse (e.g. no master host)."""


def parse_time(text: str | None) -> float:
    """SimGrid latency strings: '50us', '1.0E-4s', '0'."""
    if not text:
        return 0.0
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([a-zA-Z]*)\s*", text)
    if not m:
        raise PlatformError(f"cannot parse time '{text}'")
    unit = m.group(2) or "s"
    return float(m.group(1)) * _UNITS[unit]


def parse_speed(text: str | None) -> float:
    """Host speeds such as '1Gf' or '16.673E9f' (first pstate only)."""
    if not text:
        return 1e9
    first = text.split(",")[0].strip()
    m = re.fullmatch(r"([0-9.eE+-]+)\s*([a-zA-Z]*)", first)
    if not m:
        raise PlatformError(f"cannot parse speed '{text}'")
    return float(m.group(1)) * _SPEED_UNITS.get(m.group(2).lower() or "f", 1.0)


@dataclass
class Host:
    name: str
    speed: float
    props: dict[str, str]
    zone_props: dict[str, str]
    zone: Zone


@dataclass
class Zone:
    name: str
    parent: Zone | None
    props: dict[str, str] = field(default_factory=dict)
    routes: dict[tuple[str, str], float] = field(default_factory=dict)
    zone_routes: dict[tuple[str, str], tuple[str, str, float]] = field(default_factory=dict)
    children: list[Zone] = field(default_factory=list)
    # cluster model: private link latency (up/down) and backbone latency
    cluster: tuple[float, float] | None = None
    router: str | None = None


def _props(elem: ET.Element) -> dict[str, str]:
    return {p.get("id", ""): p.get("value", "") for p in elem.findall("prop")}


def _radical(radical: str) -> list[int]:
    out: list[int] = []
    for part in radical.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


class Platform:
    """Parsed platform: all hosts by name plus a latency oracle between them."""

    def __init__(self, path: str) -> None:
        self.hosts: dict[str, Host] = {}
        self._links: dict[str, float] = {}
        self._elem_zone: dict[str, Zone] = {}  # host or router name -> zone directly holding it
        root = ET.parse(path).getroot()
        self.root = Zone("__root__", None)
        self._walk(root, self.root, {})
        self._cache: dict[tuple[str, str], float] = {}

    # --- parsing -------------------------------------------------------------------------
    def _walk(self, elem: ET.Element, zone: Zone, zprops: dict[str, str]) -> None:
        for child in elem:
            tag = child.tag
            if tag in ("zone", "AS"):
                sub = Zone(child.get("id", ""), zone, _props(child))
                zone.children.append(sub)
                self._walk(child, sub, {**zprops, **sub.props})
            elif tag == "host":
                self._add_host(child.get("id", ""), child.get("speed"), _props(child), zprops, zone)
            elif tag == "cluster":
                self._add_cluster(child, zone, zprops)
            elif tag == "link":
                self._links[child.get("id", "")] = parse_time(child.get("latency"))
            elif tag in ("route", "zoneRoute", "ASroute"):
                self._add_route(child, zone)
            elif tag == "router":
                self._elem_zone[child.get("id", "")] = zone

    def _add_host(self, name: str, speed: str | None, props: dict[str, str], zprops: dict[str, str],
                  zone: Zone) -> None:
        self.hosts[name] = Host(name, parse_speed(speed), props, dict(zprops), zone)
        self._elem_zone[name] = zone

    def _add_cluster(self, elem: ET.Element, parent: Zone, zprops: dict[str, str]) -> None:
        cid = elem.get("id", "")
        zone = Zone(cid, parent, {}, cluster=(parse_time(elem.get("lat")), parse_time(elem.get("bb_lat"))))
        parent.children.append(zone)
        prefix, suffix = elem.get("prefix", ""), elem.get("suffix", "")
        zone.router = elem.get("router_id") or f"{prefix}{cid}_router{suffix}"
        self._elem_zone[zone.router] = zone
        props = _props(elem)
        for i in _radical(elem.get("radical", "0")):
            self._add_host(f"{prefix}{i}{suffix}", elem.get("speed"), dict(props), zprops, zone)

    def _add_route(self, elem: ET.Element, zone: Zone) -> None:
        lat = sum(self._links.get(lc.get("id", ""), 0.0) for lc in elem.findall("link_ctn"))
        src, dst = elem.get("src", ""), elem.get("dst", "")
        sym = elem.get("symmetrical", "YES").upper() != "NO"
        if elem.tag == "route":
            zone.routes[(src, dst)] = lat
            if sym:
                zone.routes.setdefault((dst, src), lat)
        else:
            gw_src, gw_dst = elem.get("gw_src", ""), elem.get("gw_dst", "")
            zone.zone_routes[(src, dst)] = (gw_src, gw_dst, lat)
            if sym:
                zone.zone_routes.setdefault((dst, src), (gw_dst, gw_src, lat))

    # --- latency -------------------------------------------------------------------------
    def latency(self, src: str, dst: str) -> float:
        """One-way latency of a tiny message from host `src` to host `dst`."""
        key = (src, dst)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._elem_latency(src, dst)
            self._cache[key] = cached
        return cached

    @staticmethod
    def _chain(zone: Zone) -> list[Zone]:
        out = []
        z: Zone | None = zone
        while z is not None:
            out.append(z)
            z = z.parent
        return out[::-1]

    def _elem_latency(self, src: str, dst: str) -> float:
        za, zb = self._elem_zone[src], self._elem_zone[dst]
        ca, cb = self._chain(za), self._chain(zb)
        i = 0
        while i < min(len(ca), len(cb)) and ca[i] is cb[i]:
            i += 1
        common = ca[i - 1]
        if i == len(ca) and i == len(cb):
            return self._local(common, src, dst)
        # at least one side is inside a child zone of `common`
        a_name = ca[i].name if i < len(ca) else src
        b_name = cb[i].name if i < len(cb) else dst
        if (a_name, b_name) in common.zone_routes:
            gw_a, gw_b, lat = common.zone_routes[(a_name, b_name)]
        elif (a_name, b_name) in common.routes:
            gw_a, gw_b, lat = src, dst, common.routes[(a_name, b_name)]
        else:
            return 0.0
        lat_a = self._elem_latency(src, gw_a) if gw_a != src and gw_a in self._elem_zone else 0.0
        lat_b = self._elem_latency(gw_b, dst) if gw_b != dst and gw_b in self._elem_zone else 0.0
        return lat_a + lat + lat_b

    def _local(self, zone: Zone, src: str, dst: str) -> float:
        if zone.cluster is not None:
            private, backbone = zone.cluster
            if src == zone.router or dst == zone.router:
                return private + backbone
            return 2 * private + backbone
        if (src, dst) in zone.routes:
            return zone.routes[(src, dst)]
        return 0.0
