"""Pydantic models of every Batsim 4.2.1 event, in both directions (PROTOCOL.md §1.4-1.5).

Models are strict: a field of the wrong JSON type is an error rather than a silent coercion, because
Batsim itself asserts on shapes and a lenient reader would hide a peer that is not Batsim 4.2.1.
Batsim→DP payloads allow extra keys only where Batsim forwards user data verbatim (job and profile JSON,
generic NOTIFY payloads); DP→Batsim payloads forbid them because Batsim counts members.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Open(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", frozen=True)


JobState = Literal[
    "NOT_SUBMITTED",
    "SUBMITTED",
    "RUNNING",
    "COMPLETED_SUCCESSFULLY",
    "COMPLETED_FAILED",
    "COMPLETED_WALLTIME_REACHED",
    "COMPLETED_KILLED",
    "REJECTED",
]


# ---- Batsim -> decision process -------------------------------------------------------------------


class Resource(_Strict):
    id: int = Field(ge=0)  # Batsim numbers hosts from 0; a negative id is no interval of hosts
    name: str
    state: str
    properties: dict[str, str] = Field(default_factory=dict)
    zone_properties: dict[str, str] = Field(default_factory=dict)


class SimulationBegins(_Open):
    nb_resources: int
    nb_compute_resources: int
    nb_storage_resources: int = 0
    allow_compute_sharing: bool
    allow_storage_sharing: bool = True
    config: dict[str, Any] = Field(default_factory=dict)
    compute_resources: list[Resource]
    storage_resources: list[Resource] = Field(default_factory=list)
    workloads: dict[str, str] = Field(default_factory=dict)
    profiles: dict[str, dict[str, dict[str, Any]]] = Field(default_factory=dict)


class JobSubmitted(_Strict):
    job_id: str
    job: dict[str, Any] | None = None
    profile: dict[str, Any] | None = None


class JobCompleted(_Strict):
    job_id: str
    job_state: JobState
    return_code: int
    alloc: str


class JobKilled(_Strict):
    job_ids: list[str]
    job_progress: dict[str, Any] = Field(default_factory=dict)


class ResourceStateChanged(_Strict):
    resources: str
    state: str


class RequestedCall(_Strict):
    pass


class Notify(_Open):
    type: str
    resources: str | None = None


class Query(_Strict):
    requests: dict[str, Any]


class Answer(_Open):
    pass


class FromJobMsg(_Strict):
    job_id: str
    msg: Any


class SimulationEnds(_Strict):
    pass


INCOMING: dict[str, type[BaseModel]] = {
    "SIMULATION_BEGINS": SimulationBegins,
    "JOB_SUBMITTED": JobSubmitted,
    "JOB_COMPLETED": JobCompleted,
    "JOB_KILLED": JobKilled,
    "RESOURCE_STATE_CHANGED": ResourceStateChanged,
    "REQUESTED_CALL": RequestedCall,
    "NOTIFY": Notify,
    "QUERY": Query,
    "ANSWER": Answer,
    "FROM_JOB_MSG": FromJobMsg,
    "SIMULATION_ENDS": SimulationEnds,
}


@dataclass(frozen=True, slots=True)
class Event:
    """One decoded Batsim event: `data` is the validated, typed payload for `type`."""

    timestamp: float
    type: str
    data: BaseModel


@dataclass(frozen=True, slots=True)
class Message:
    now: float
    events: list[Event]


# ---- decision process -> Batsim ---------------------------------------------------------------------


class ExecuteJob(_Strict):
    job_id: str
    alloc: str = Field(min_length=1)
    mapping: dict[str, str] | None = None  # executor → index in alloc, when executors share a host


class RejectJob(_Strict):
    job_id: str


class KillJob(_Strict):
    job_ids: list[str] = Field(min_length=1)


class CallMeLater(_Strict):
    timestamp: float


class SetResourceState(_Strict):
    resources: str = Field(min_length=1)
    state: str


class SetJobMetadata(_Strict):
    job_id: str
    metadata: str = Field(pattern=r'^[^"]*$')


class ChangeJobState(_Strict):
    job_id: str
    job_state: Literal[
        "NOT_SUBMITTED",
        "RUNNING",
        "COMPLETED_SUCCESSFULLY",
        "COMPLETED_WALLTIME_REACHED",
        "COMPLETED_KILLED",
        "REJECTED",
    ]
    kill_reason: str | None = None


class RegisterJob(_Strict):
    job_id: str
    job: dict[str, Any]


class RegisterProfile(_Strict):
    workload_name: str
    profile_name: str
    profile: dict[str, Any]


class NotifyOut(_Strict):
    type: Literal["registration_finished", "continue_registration"]


OUTGOING: dict[type[BaseModel], str] = {
    ExecuteJob: "EXECUTE_JOB",
    RejectJob: "REJECT_JOB",
    KillJob: "KILL_JOB",
    CallMeLater: "CALL_ME_LATER",
    SetResourceState: "SET_RESOURCE_STATE",
    SetJobMetadata: "SET_JOB_METADATA",
    ChangeJobState: "CHANGE_JOB_STATE",
    RegisterJob: "REGISTER_JOB",
    RegisterProfile: "REGISTER_PROFILE",
    NotifyOut: "NOTIFY",
}
