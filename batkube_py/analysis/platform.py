"""Node capacities and pod requests for plain Batsim runs, from the platform XML and workload JSON.

A Batsim output directory has no pods.csv/nodes.csv, but cpu utilisation and the over-allocation check
need each host's cores and each job's cpu. Batkube carries both as properties: ``<prop id="core"|"cpu">``
on hosts and ``"cpu"`` in delay profiles (PROTOCOL.md §1.6-1.7). Resource ids follow Batsim's rule:
compute hosts sorted by name (not XML order), the master hidden.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd

from batkube_py.analysis.loading import AnalysisError

_SUFFIX = {
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
}
_QUANTITY = re.compile(r"^\s*([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_quantity(value: object) -> float:
    """Kubernetes quantity ("500m", "1.5", "4Gi") → float; numbers pass through."""
    if isinstance(value, int | float):
        return float(value)
    match = _QUANTITY.match(str(value))
    if not match or match.group(2) not in ("", *_SUFFIX):
        raise ValueError(f"not a quantity: {value!r}")
    return float(match.group(1)) * _SUFFIX.get(match.group(2), 1.0)


MAX_HOSTS = 1_000_000  # far above any simulated cluster; a radical of 10^9 hosts is refused, not expanded


def _radical_ranges(radical: str) -> list[range]:
    """A cluster's radical ("0-99,200") as ranges, checked and sized before anything is expanded."""
    out: list[range] = []
    for part in radical.split(","):
        lo, _, hi = part.strip().partition("-")
        if not lo.isdigit() or not (hi or lo).isdigit() or int(hi or lo) < int(lo):
            raise ValueError(f"radical {radical!r}: expected ranges like 0-99,200")
        out.append(range(int(lo), int(hi or lo) + 1))
    return out


def read_platform(path: Path, master: str = "master_host") -> pd.DataFrame:
    """Compute hosts with Batsim's resource ids and their cpu (``core``/``cpu`` prop, default 1)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError, ValueError) as exc:
        raise AnalysisError(f"{path}: cannot read platform XML ({exc})") from None
    hosts: list[tuple[str, dict[str, str]]] = []
    for elem in root.iter():
        props = {p.get("id", ""): p.get("value", "") for p in elem.findall("prop")}
        if elem.tag == "host":
            hosts.append((elem.get("id", ""), props))
        elif elem.tag == "cluster":
            prefix, suffix = elem.get("prefix", ""), elem.get("suffix", "")
            try:
                ranges = _radical_ranges(elem.get("radical", "0"))
            except ValueError as exc:
                raise AnalysisError(f"{path}: cluster {elem.get('id', '?')!r}: {exc}") from None
            if len(hosts) + sum(len(r) for r in ranges) > MAX_HOSTS:
                raise AnalysisError(f"{path}: more than {MAX_HOSTS:,} hosts; refused (is the radical right?)")
            hosts += [(f"{prefix}{i}{suffix}", props) for r in ranges for i in r]
        if len(hosts) > MAX_HOSTS:
            raise AnalysisError(f"{path}: more than {MAX_HOSTS:,} hosts; refused")
    rows = []
    for name, props in sorted(hosts, key=lambda h: h[0]):
        role = props.get("role", "")
        if name == master or role in ("master", "storage"):
            continue
        cpu = props.get("cpu", props.get("core", "1"))
        mem = props.get("memory")
        try:
            rows.append(
                {"node": name, "cpu": parse_quantity(cpu), "memory": parse_quantity(mem) if mem else np.nan}
            )
        except ValueError as exc:
            raise AnalysisError(f"{path}: host {name}: {exc}") from exc
    if not rows:
        raise AnalysisError(f"{path}: no compute host found")
    nodes = pd.DataFrame(rows)
    nodes["resource_id"] = np.arange(len(nodes), dtype=float)
    return nodes


def read_workload_cpu(path: Path) -> dict[str, float]:
    """Full job id ("w0!1") → cpu of its profile; jobs whose profile has no cpu are left out."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        profiles = data["profiles"]
        jobs = data["jobs"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise AnalysisError(f"{path}: not a Batsim workload with 'jobs' and 'profiles' ({exc})") from None
    if not isinstance(profiles, dict) or not isinstance(jobs, list):
        raise AnalysisError(f"{path}: expected 'profiles' to be an object and 'jobs' an array")
    cpu_of: dict[str, float] = {}
    for name, prof in profiles.items():
        if isinstance(prof, dict) and "cpu" in prof:
            try:
                cpu_of[name] = parse_quantity(prof["cpu"])
            except ValueError as exc:
                raise AnalysisError(f"{path}: profile {name}: {exc}") from exc
    out = {}
    for job in jobs:
        if not isinstance(job, dict):
            raise AnalysisError(f"{path}: every job must be an object, got {str(job)[:60]!r}")
        jid = str(job.get("id"))
        full = jid if "!" in jid else f"w0!{jid}"
        if job.get("profile") in cpu_of:
            out[full] = cpu_of[job["profile"]]
    return out


def first_resource(alloc: pd.Series) -> pd.Series:
    """First resource id of Batsim interval sets ("3", "0-3 5"); NaN when empty. Vectorised."""
    head = alloc.str.split(r"[ -]", n=1, regex=True).str[0]
    return pd.to_numeric(head, errors="coerce")


def pods_from_jobs(
    jobs: pd.DataFrame, nodes: pd.DataFrame, cpu_by_job: dict[str, float] | None
) -> pd.DataFrame:
    """One pseudo-pod per started job, on the node of its first allocated resource.

    Batkube jobs use one resource each; multi-resource jobs are counted on their first host only.
    Without a workload, each job is assumed to request 1 cpu (the thesis workloads' value).
    """
    started = jobs[jobs["starting_time"].notna()]
    rid = first_resource(started["allocated_resources"])
    node_of = pd.Series(nodes["node"].to_numpy(), index=nodes["resource_id"].to_numpy())
    cpu = started["job_id"].map(cpu_by_job or {}).fillna(1.0)
    return pd.DataFrame(
        {
            "job_id": started["job_id"].to_numpy(),
            "node": rid.map(node_of).to_numpy(),
            "resource_id": rid.to_numpy(),
            "cpu_request": cpu.to_numpy(),
            "submit_time": started["submission_time"].to_numpy(),
            "bind_time": started["starting_time"].to_numpy(),
            "finish_time": started["finish_time"].to_numpy(),
            "state": started["state"].str.capitalize().to_numpy(),
        }
    )
