"""Batsim's view of the platform: master host, compute/storage machine ids, states.

Ids follow SimGrid's host order (lexicographic by name), master excluded, compute
first then storage; this is what a decision process sees in SIMULATION_BEGINS.
Machine state time accounting mimics export.cpp: only *closed* idle/computing
periods are summed, which is why Batsim's time_idle ignores trailing idleness.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import BatsimAbort, check
from .machine_states import MachineStates
from .simplatform import Host, Platform, PlatformError

ROLES = ("compute_node", "master", "storage")


@dataclass
class Machine:
    id: int
    name: str
    host: Host
    role: str
    properties: dict[str, str]
    jobs: set[str] = field(default_factory=set)
    state: str = "idle"
    since: float = 0.0


class Machines:
    """Compute and storage machines plus the master host name."""

    def __init__(self, platform: Platform, master_name: str = "master_host",
                 roles: dict[str, str] | None = None, limit: int = -1) -> None:
        role_map = {master_name: "master", **(roles or {})}  # -r after the master, as hosts_roles_map
        host_roles: dict[str, str] = {}
        for name, host in platform.hosts.items():
            role = host.props.get("role", "")
            if name in role_map:
                role = f"{role},{role_map[name]}" if "role" in host.props else role_map[name]
            if role and role not in ROLES:
                raise PlatformError(f"Cannot create any role from string description '{role}' existing "
                                    "roles are: compute_node, master, storage, ")
            check(role not in ("", "compute_node") or host.speed > 0,
                  f"Invalid platform file '{platform.path}': host '{name}' is a compute node but has an "
                  "invalid (non-positive) computing speed.", "../src/machines.cpp:241")  # fmt: skip
            if role == "master" and any(r == "master" for r in host_roles.values()):
                raise BatsimAbort("There are two master hosts...", "../src/machines.cpp:259")
            host_roles[name] = role
        compute = sorted(n for n, r in host_roles.items() if r in ("", "compute_node"))
        if limit > 0:
            check(limit <= len(compute), f"Impossible to compute on M={limit} machines: only {len(compute)} "
                  "machines are described in the PLATFORM_FILE.", "../src/machines.cpp:272")
            compute = compute[:limit]
        masters = [n for n, r in host_roles.items() if r == "master"]
        check(bool(masters), 'Cannot find the "master" role in the platform file', "../src/machines.cpp:308")
        self.master = masters[0]
        storage = sorted(n for n, r in host_roles.items() if r == "storage")
        self.machines: list[Machine] = []
        for name in compute + storage:
            host = platform.hosts[name]
            props = {"role": host_roles[name]}
            props.update(host.props)
            props["role"] = host_roles[name]
            role = host_roles[name] or "compute_node"
            self.machines.append(Machine(len(self.machines), name, host, role, props))
        self.nb_compute = len(compute)
        self.nb_storage = len(storage)
        self.states = MachineStates([m.name for m in self.machines], self.nb_compute)
        self.time_computing = 0.0
        self.time_idle = 0.0

    def __len__(self) -> int:
        return len(self.machines)

    def exists(self, mid: int) -> bool:
        return 0 <= mid < len(self.machines)

    def add_job(self, mid: int, job_id: str, now: float) -> None:
        m = self.machines[mid]
        m.jobs.add(job_id)
        if m.state == "idle":
            self.time_idle += now - m.since
            m.state, m.since = "computing", now

    def remove_job(self, mid: int, job_id: str, now: float) -> None:
        m = self.machines[mid]
        m.jobs.discard(job_id)
        if not m.jobs and m.state == "computing":
            self.time_computing += now - m.since
            m.state, m.since = "idle", now

    def resources_json(self, storage: bool) -> list[dict[str, object]]:
        sel = self.machines[self.nb_compute:] if storage else self.machines[:self.nb_compute]
        return [{"id": m.id, "name": m.name, "state": "idle", "properties": m.properties,
                 "zone_properties": m.host.zone_props} for m in sel]
