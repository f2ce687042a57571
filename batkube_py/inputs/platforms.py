"""SimGrid platforms for Kubernetes-style clusters: N identical nodes plus Batsim's master host, in one
SimGrid <cluster> or in racks (one <cluster> each) joined by a backbone link.

Node capacity travels as host properties (`core`, `memory`, `pods`, `taints`, labels), the only host
data Batsim forwards to the decision process; SimGrid's own `core`/`speed` attributes never reach it
(they decide how fast parallel tasks compute: a rack platform sets `core` to the whole cores of a node).
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from batkube_py import quantities


def cluster_platform(
    nodes: int,
    cores: str = "1",
    memory: str | None = None,
    *,
    prefix: str = "node-",
    speed: str = "1Gf",
    pods: int | None = None,
    labels: dict[str, str] | None = None,
    taints: str | None = None,
) -> str:
    if nodes < 1:
        raise ValueError(f"--nodes must be at least 1, got {nodes}")
    prop_xml = _prop_xml(_node_props(cores, memory, pods, labels, taints))
    link = 'bw="125MBps" lat="50us" bb_bw="2.25GBps" bb_lat="500us"'
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
    <cluster id="compute" prefix={quoteattr(prefix)} suffix="" radical="0-{nodes - 1}"
        speed={quoteattr(speed)} {link}>{prop_xml}
    </cluster>
    <cluster id="master" prefix="master_host" suffix="" radical="0-0" speed={quoteattr(speed)} {link}>
        <prop id="role" value="master"/>
    </cluster>
    <link id="backbone" bandwidth="1.25GBps" latency="500us"/>
    <zoneRoute src="compute" dst="master" gw_src={quoteattr(prefix + "compute_router")}
        gw_dst="master_hostmaster_router">
        <link_ctn id="backbone"/>
    </zoneRoute>
</zone>
</platform>
"""


RACK_LABEL = "topology.kubernetes.io/zone"


def rack_platform(
    racks: int,
    nodes: int,
    cores: str = "1",
    memory: str | None = None,
    *,
    prefix: str = "node-",
    speed: str = "1Gf",
    pods: int | None = None,
    labels: dict[str, str] | None = None,
    taints: str | None = None,
    backbone_bw: str = "1.25GBps",
    backbone_lat: str = "500us",
    rack_label: str = RACK_LABEL,
) -> str:
    """RACKS SimGrid <cluster>s of NODES/RACKS nodes (rack r: `rack<r>`, nodes numbered on), each node
    labelled `rack_label=rack<r>` (a cluster's properties are its hosts' properties); inside a rack the
    nodes' 1.25 GB/s / 50 us links meet on a 2.5 GB/s / 5 us backbone (and each node has a 10 GB/s / 1 us
    loopback); racks reach each other over ONE shared link `backbone` (BACKBONE_BW, BACKBONE_LAT), the
    way the reference runs of ../shared/batsim/transcripts-gang are built; the master host has its own
    link, so Batsim's messages do not ride the inter-rack backbone."""
    if racks < 1 or nodes < racks or nodes % racks:
        raise ValueError(f"--nodes ({nodes}) must be a positive multiple of --racks ({racks})")
    from batkube_py.batsim_double.simplatform import PlatformError, parse_bandwidth, parse_time

    try:
        ok_bw = parse_bandwidth(backbone_bw) > 0
    except (PlatformError, KeyError):
        ok_bw = False
    if not ok_bw:
        raise ValueError(f"--rack-bandwidth: expected a SimGrid bandwidth > 0 (1.25GBps): {backbone_bw!r}")
    try:
        ok_lat = parse_time(backbone_lat) >= 0
    except (PlatformError, KeyError):
        ok_lat = False
    if not ok_lat:
        raise ValueError(f"--rack-latency: expected a SimGrid latency >= 0 (500us), got {backbone_lat!r}")
    base = _node_props(cores, memory, pods, labels, taints)
    core = max(1, int(quantities.milli_cpu(cores) // 1000))
    per = nodes // racks
    link = 'bw="1.25GBps" lat="50us" bb_bw="2.5GBps" bb_lat="5us"'
    out = []
    for r in range(racks):
        props = _prop_xml({**base, rack_label: f"rack{r}"})
        radical = f"{r * per}-{(r + 1) * per - 1}"
        out.append(f"""    <cluster id="rack{r}" prefix={quoteattr(prefix)} suffix="" radical="{radical}"
        speed={quoteattr(speed)} core="{core}" {link}
        loopback_bw="10GBps" loopback_lat="1us">{props}
    </cluster>""")
    out.append(f"""    <cluster id="master" prefix="master_host" suffix="" radical="0-0"
        speed={quoteattr(speed)} {link}>
        <prop id="role" value="master"/>
    </cluster>
    <link id="backbone" bandwidth={quoteattr(backbone_bw)} latency={quoteattr(backbone_lat)}/>
    <link id="master_link" bandwidth="1.25GBps" latency="500us"/>""")
    for a in range(racks):
        for b in range(a + 1, racks):
            gw_a, gw_b = quoteattr(f"{prefix}rack{a}_router"), quoteattr(f"{prefix}rack{b}_router")
            out.append(f"""    <zoneRoute src="rack{a}" dst="rack{b}" gw_src={gw_a} gw_dst={gw_b}>
        <link_ctn id="backbone"/></zoneRoute>""")
        gw_a = quoteattr(f"{prefix}rack{a}_router")
        out.append(f"""    <zoneRoute src="rack{a}" dst="master" gw_src={gw_a}
        gw_dst="master_hostmaster_router"><link_ctn id="master_link"/></zoneRoute>""")
    body = "\n".join(out)
    return f"""<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
<zone id="AS0" routing="Full">
{body}
</zone>
</platform>
"""


def _node_props(cores: str, memory: str | None, pods: int | None, labels: dict[str, str] | None,
                taints: str | None) -> dict[str, str]:
    """A node's properties, checked as the adapter will read them (cores and memory are quantities)."""
    quantities.milli_cpu(cores)
    props = {"core": cores}
    if memory is not None:
        quantities.byte_count(memory)
        props["memory"] = memory
    if pods is not None:
        props["pods"] = str(pods)
    if taints:
        from batkube_py.adapter.translate import parse_taints  # the adapter's own reading of the property

        parse_taints(taints, "--taints")
        props["taints"] = taints
    props.update(labels or {})
    return props


def _prop_xml(props: dict[str, str]) -> str:
    return "".join(f"\n        <prop id={quoteattr(k)} value={quoteattr(v)}/>" for k, v in props.items())
