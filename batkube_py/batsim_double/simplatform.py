"""SimGrid platform subset: hosts, properties, roles, and the links of each route.

Batsim's internal messages are 1-byte SimGrid communications: they pay the route's latency (summed
link by link in SimGrid's order), then share the links' bandwidth (sharing.py). Routes follow SimGrid
3.32: a Full zone's declared routes (its own implicit loopback link for a host to itself), a
<cluster>'s private up/down links and backbone, <zoneRoute>/<ASroute> between zones through their
gateways. Only the constructs used by Batsim platforms are supported: nested zones/ASes with Full
routing, <host>, <cluster>, <link>, <route>, <zoneRoute>/<ASroute>, <config> precisions.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from .errors import BatsimAbort
from .lmm import Constraint
from .sharing import Link

_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "m": 60.0, "h": 3600.0,
          "d": 86400.0, "w": 604800.0}
_BW_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 2.0**10, "mi": 2.0**20, "gi": 2.0**30,
             "ti": 2.0**40}
_SPEED_UNITS = {"f": 1.0, "kf": 1e3, "mf": 1e6, "gf": 1e9, "tf": 1e12, "pf": 1e15, "ef": 1e18}


ASSERTION = "simgrid::AssertionError by maestro/0"


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


def parse_bandwidth(text: str | None) -> float:
    """SimGrid bandwidths: '125MBps', '1.25E8Bps', '10000MiBps', '10Gbps' (bits)."""
    if not text:
        return 1e9
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([kKmMgGtT]?i?)([Bb])ps\s*", text)
    if not m:
        m2 = re.fullmatch(r"\s*([0-9.eE+-]+)\s*", text)
        if not m2:
            raise PlatformError(f"cannot parse bandwidth '{text}'")
        return float(m2.group(1))
    value = float(m.group(1)) * _BW_UNITS[m.group(2).lower()]
    return value / 8 if m.group(3) == "b" else value


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
    speed: float  # one core's speed (first pstate)
    props: dict[str, str]
    zone_props: dict[str, str]
    zone: Zone
    cores: int = 1
    cpu: Constraint | None = None  # L07's CPU constraint: cores x speed


@dataclass
class Zone:
    name: str
    parent: Zone | None
    props: dict[str, str] = field(default_factory=dict)
    routes: dict[tuple[str, str], tuple[Link, ...]] = field(default_factory=dict)
    zone_routes: dict[tuple[str, str], tuple[str, str, tuple[Link, ...]]] = field(default_factory=dict)
    children: list[Zone] = field(default_factory=list)
    # cluster model (a StarZone): each host's links up and down, its loopback, and the backbone
    private: dict[str, tuple[Link, Link]] | None = None
    backbone: Link | None = None
    router: str | None = None
    loopbacks: dict[str, Link] = field(default_factory=dict)
    limiters: dict[str, Link] = field(default_factory=dict)


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
        self.path = path
        self.hosts: dict[str, Host] = {}
        self._links: dict[str, Link] = {}
        self.config: dict[str, str] = {}
        self._elem_zone: dict[str, Zone] = {}  # host or router name -> zone directly holding it
        root = ET.parse(path).getroot()
        self.root = Zone("__root__", None)
        for cfg in root.iter("config"):
            self.config.update(_props(cfg))
        self.surf_precision = float(self.config.get("surf/precision", 1e-9))
        self.maxmin_precision = float(self.config.get("maxmin/precision", 1e-5))
        self.loopback = Link("__loopback__", float(self.config.get("network/loopback-bw", 10e9)),
                             float(self.config.get("network/loopback-lat", 0.0)), fatpipe=True)
        self._walk(root, self.root, {})
        self._cache: dict[tuple[str, str], tuple[tuple[Link, ...], float]] = {}

    # --- parsing -------------------------------------------------------------------------
    def _walk(self, elem: ET.Element, zone: Zone, zprops: dict[str, str]) -> None:
        for child in elem:
            tag = child.tag
            _refuse_unmodelled(child)
            if tag in ("zone", "AS"):
                sub = Zone(child.get("id", ""), zone, _props(child))
                zone.children.append(sub)
                self._walk(child, sub, {**zprops, **sub.props})
            elif tag == "host":
                self._add_host(child.get("id", ""), child.get("speed"), _props(child), zprops, zone,
                               _cores(child))
            elif tag == "cluster":
                self._add_cluster(child, zone, zprops)
            elif tag == "link":
                lid = child.get("id", "")
                self._links[lid] = Link(lid, parse_bandwidth(child.get("bandwidth")),
                                        parse_time(child.get("latency")),
                                        child.get("sharing_policy", "SHARED").upper() == "FATPIPE")
            elif tag in ("route", "zoneRoute", "ASroute"):
                self._add_route(child, zone)
            elif tag == "router":
                self._elem_zone[child.get("id", "")] = zone

    def _add_host(self, name: str, speed: str | None, props: dict[str, str], zprops: dict[str, str],
                  zone: Zone, cores: int = 1) -> None:
        host = self.hosts[name] = Host(name, parse_speed(speed), props, dict(zprops), zone, cores)
        host.cpu = Constraint(name, cores * host.speed)
        self._elem_zone[name] = zone

    def _add_cluster(self, elem: ET.Element, parent: Zone, zprops: dict[str, str]) -> None:
        cid = elem.get("id", "")
        zone = Zone(cid, parent, {}, private={})
        bw, lat = parse_bandwidth(elem.get("bw")), parse_time(elem.get("lat"))
        if elem.get("bb_bw") or elem.get("bb_lat"):
            zone.backbone = Link(f"{cid}_backbone", parse_bandwidth(elem.get("bb_bw")),
                                 parse_time(elem.get("bb_lat")),
                                 elem.get("bb_sharing_policy", "SHARED").upper() == "FATPIPE")
        parent.children.append(zone)
        prefix, suffix = elem.get("prefix", ""), elem.get("suffix", "")
        zone.router = elem.get("router_id") or f"{prefix}{cid}_router{suffix}"
        self._elem_zone[zone.router] = zone
        props = _props(elem)
        shared = elem.get("sharing_policy", "SPLITDUPLEX").upper()
        lb_bw, lb_lat = elem.get("loopback_bw"), elem.get("loopback_lat")
        limiter = elem.get("limiter_link")
        for i in _radical(elem.get("radical", "0")):
            name = f"{prefix}{i}{suffix}"
            # A <cluster> is a zone whose <prop>s are also its hosts' zone properties; Batsim lists them
            # from SimGrid's std::unordered_map, most recently inserted first for such small maps.
            self._add_host(name, elem.get("speed"), dict(props), dict(reversed(props.items())), zone,
                           _cores(elem))
            if (lb_bw and parse_bandwidth(lb_bw) > 0) or (lb_lat and parse_time(lb_lat) > 0):
                lb_bandwidth = parse_bandwidth(lb_bw) if lb_bw else 0.0
                lb_name = f"{cid}_link_{i}_loopback"
                zone.loopbacks[name] = Link(lb_name, lb_bandwidth, parse_time(lb_lat), True)
            if limiter and parse_bandwidth(limiter) > 0:
                zone.limiters[name] = Link(f"{cid}_link_{i}_limiter", parse_bandwidth(limiter), 0.0)
            if shared == "SPLITDUPLEX":
                zone.private[name] = (Link(f"{cid}_link_{i}_UP", bw, lat),
                                      Link(f"{cid}_link_{i}_DOWN", bw, lat))
            else:
                link = Link(f"{cid}_link_{i}", bw, lat, shared == "FATPIPE")
                zone.private[name] = (link, link)

    def _add_route(self, elem: ET.Element, zone: Zone) -> None:
        ids = [lc.get("id", "") for lc in elem.findall("link_ctn")]
        lat = tuple(self._links[i] for i in ids if i in self._links)
        src, dst = elem.get("src", ""), elem.get("dst", "")
        sym = elem.get("symmetrical", "YES").upper() != "NO"
        if elem.tag == "route":
            zone.routes[(src, dst)] = lat
            if sym:
                zone.routes.setdefault((dst, src), lat[::-1])
        else:
            gw_src, gw_dst = elem.get("gw_src", ""), elem.get("gw_dst", "")
            zone.zone_routes[(src, dst)] = (gw_src, gw_dst, lat)
            if sym:
                zone.zone_routes.setdefault((dst, src), (gw_dst, gw_src, lat[::-1]))

    # --- routes --------------------------------------------------------------------------
    def route(self, src: str, dst: str) -> tuple[tuple[Link, ...], float]:
        """The links from host `src` to host `dst` and their latency, summed in SimGrid's order."""
        key = (src, dst)
        cached = self._cache.get(key)
        if cached is None:
            links: list[Link] = []
            counted: list[Link] = []
            self._global(src, dst, links, counted)
            lat = 0.0
            for link in counted:
                lat += link.latency
            cached = self._cache[key] = (tuple(links), lat)
        return cached

    @staticmethod
    def _chain(zone: Zone) -> list[Zone]:
        out = []
        z: Zone | None = zone
        while z is not None:
            out.append(z)
            z = z.parent
        return out[::-1]

    def _global(self, src: str, dst: str, links: list[Link], counted: list[Link]) -> None:
        """NetZoneImpl::get_global_route: `links` in path order; `counted` in the order their latencies are
        added (the common zone's route first, then the way up from `src`, then down to `dst`)."""
        za, zb = self._elem_zone[src], self._elem_zone[dst]
        ca, cb = self._chain(za), self._chain(zb)
        i = 0
        while i < min(len(ca), len(cb)) and ca[i] is cb[i]:
            i += 1
        common = ca[i - 1]
        if i == len(ca) and i == len(cb):
            local = self._local(common, src, dst)
            links.extend(local)
            counted.extend(local)
            return
        a_name = ca[i].name if i < len(ca) else src
        b_name = cb[i].name if i < len(cb) else dst
        if (a_name, b_name) in common.zone_routes:
            gw_a, gw_b, mid = common.zone_routes[(a_name, b_name)]
        elif (a_name, b_name) in common.routes:
            gw_a, gw_b, mid = src, dst, common.routes[(a_name, b_name)]
        else:  # SimGrid asserts when a comm or a ptask first needs the route (Batsim aborts then)
            raise BatsimAbort(f"Bad gateways for route from '{src}' to '{dst}'.",
                              "./src/xbt/exception.cpp:40", exception=ASSERTION)  # fmt: skip
        counted.extend(mid)
        if gw_a != src and gw_a in self._elem_zone:
            self._global(src, gw_a, links, counted)
        links.extend(mid)
        if gw_b != dst and gw_b in self._elem_zone:
            self._global(gw_b, dst, links, counted)

    def _local(self, zone: Zone, src: str, dst: str) -> tuple[Link, ...]:
        if zone.private is not None:
            return self._star(zone, src, dst)
        if (src, dst) in zone.routes:
            return zone.routes[(src, dst)]
        if src == dst:
            return (self.loopback,)
        return ()

    @staticmethod
    def _star(zone: Zone, src: str, dst: str) -> tuple[Link, ...]:
        """StarZone::get_local_route of a <cluster>: the loopback to itself, else src's links up (limiter,
        link, backbone) then dst's links down (backbone, link, limiter), each link once."""
        if src == dst and src in zone.loopbacks:
            return (zone.loopbacks[src],)
        seq: list[Link | None] = []
        if src != zone.router:
            seq += [zone.limiters.get(src), zone.private[src][0], zone.backbone]  # type: ignore[index]
        if dst != zone.router:
            seq += [zone.backbone, zone.private[dst][1], zone.limiters.get(dst)]  # type: ignore[index]
        out: list[Link] = []
        for link in seq:
            if link is not None and not any(link is x for x in out):
                out.append(link)
        return tuple(out)


_UNMODELLED_ATTRS = ("speed_file", "availability_file", "state_file", "bandwidth_file", "latency_file")


def _refuse_unmodelled(elem: ET.Element) -> None:
    """What SimGrid would route or vary differently from the double: refused, never approximated."""
    what = None
    if elem.tag in ("zone", "AS") and elem.get("routing", "Full") != "Full":
        what = f"routing=\"{elem.get('routing')}\" (zone '{elem.get('id')}'): only Full routing is modelled"
    elif elem.tag == "cluster" and elem.get("topology", "FLAT").upper() != "FLAT":
        what = f"cluster topology {elem.get('topology')} ('{elem.get('id')}'): only flat clusters are"
        what += " modelled"
    elif elem.tag in ("trace", "trace_connect", "storage", "peer", "cabinet", "bypassRoute", "bypassASroute",
                      "bypassZoneRoute"):
        what = f"<{elem.tag}> is not modelled"
    else:
        attrs = [a for a in _UNMODELLED_ATTRS if elem.get(a)]
        if attrs:
            what = f"{attrs[0]} on <{elem.tag} id='{elem.get('id')}'>: profiles over time are not modelled"
    if what:
        raise PlatformError(f"batsim double: {what} (see docs/batsim_double.md)")


def _cores(elem: ET.Element) -> int:
    return int(elem.get("core", "1") or 1)
