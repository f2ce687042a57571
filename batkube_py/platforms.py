"""SimGrid platforms for Kubernetes-style clusters: N identical nodes plus Batsim's master host.

Node capacity travels as host properties (`core`, `memory`, `pods`, `taints`, labels), the only host
data Batsim forwards to the decision process; SimGrid's own `core`/`speed` attributes never reach it.
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
    quantities.milli_cpu(cores)
    if memory is not None:
        quantities.byte_count(memory)
    props = {"core": cores}
    if memory is not None:
        props["memory"] = memory
    if pods is not None:
        props["pods"] = str(pods)
    if taints:
        from batkube_py.translate import parse_taints  # the adapter's own reading of the property

        parse_taints(taints, "--taints")
        props["taints"] = taints
    props.update(labels or {})
    prop_xml = "".join(f"\n        <prop id={quoteattr(k)} value={quoteattr(v)}/>" for k, v in props.items())
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
