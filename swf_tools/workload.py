"""The Batsim 4.2.1 workload swf-tools emits, validated at the edge before anything is written.

Only what batkube-py runs is modelled: ``delay`` profiles carrying ``cpu``/``memory``/``scheduler`` and
jobs of ``res`` 1, or more for a pod group (a multi-node job kept whole).
Validation catches what Batsim itself would only report as an assertion failure mid-run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator, model_validator

# Batsim treats an id containing its workload name ("w0", "w1", …) as a full "wl!job" id (PROTOCOL.md §1.3).
_WORKLOAD_NAME_IN_ID = re.compile(r"w\d")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _compact_number(value: float | int) -> float | int:
    """``3600`` rather than ``3600.0``: the thesis' Go converter wrote integral floats as integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class DelayProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["delay"] = "delay"
    delay: float = Field(ge=0)
    cpu: float | None = Field(default=None, gt=0)
    memory: str | None = None
    scheduler: str = Field(min_length=1)
    onePodPerNode: bool | None = None  # noqa: N815 (batkube's profile field: each pod of a group on its own node)
    groupPolicy: Literal["basic"] | None = None  # noqa: N815 (batkube's profile field: pods bind one by one)

    @field_validator("memory")
    @classmethod
    def _memory_is_quantity(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"\d+(Ki|Mi|Gi|Ti|k|M|G|T)?", value):
            raise ValueError(f"memory must be a Kubernetes quantity such as 512Mi, got {value!r}")
        return value

    @field_serializer("delay", "cpu")
    def _numbers(self, value: float | None) -> float | int | None:
        return None if value is None else _compact_number(value)


class Job(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1)
    subtime: float = Field(ge=0)
    res: int = Field(default=1, ge=1)  # > 1: a pod group of res pods (swf-tools convert --cores-per-node)
    profile: str
    walltime: float | None = None
    queue: str | None = None  # the job's Kueue LocalQueue (convert --queue-from)

    @field_validator("id")
    @classmethod
    def _batsim_safe_id(cls, value: str) -> str:
        if "!" in value:
            raise ValueError(f"job id {value!r} contains '!', Batsim's workload/job separator")
        if _WORKLOAD_NAME_IN_ID.search(value):
            raise ValueError(f"job id {value!r} contains a Batsim workload name (w0, w1, …); Batsim would "
                             "parse it as 'workload!job' — renumber the jobs")
        return value

    @field_validator("walltime")
    @classmethod
    def _walltime(cls, value: float | None) -> float | None:
        if value is not None and value != -1 and value <= 0:
            raise ValueError(f"walltime must be -1 or > 0, got {value}")
        return value

    @field_serializer("subtime", "walltime")
    def _numbers(self, value: float | None) -> float | int | None:
        return None if value is None else _compact_number(value)


class BatsimWorkload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    nb_res: int = Field(gt=0)
    jobs: list[Job]
    profiles: dict[str, DelayProfile]

    @field_validator("profiles")
    @classmethod
    def _profile_names(cls, profiles: dict[str, DelayProfile]) -> dict[str, DelayProfile]:
        for name in profiles:
            # batkube names the pod's container after the profile: it must be a DNS-1123 label.
            if len(name) > 63 or not _K8S_NAME.match(name):
                raise ValueError(f"profile name {name!r} is not a valid Kubernetes container name")
        return profiles

    @model_validator(mode="after")
    def _consistent(self) -> BatsimWorkload:
        seen: set[str] = set()
        for job in self.jobs:
            if job.profile not in self.profiles:
                raise ValueError(f"job {job.id!r} uses undefined profile {job.profile!r}")
            if job.id in seen:
                raise ValueError(f"duplicate job id {job.id!r}")
            seen.add(job.id)
        keys = [(p.delay, p.cpu, p.memory, p.scheduler, p.onePodPerNode) for p in self.profiles.values()]
        if len(set(keys)) != len(keys):
            raise ValueError("two profiles share the same (delay, cpu, memory, scheduler)")
        return self

    def to_json(self, indent: int | None = None) -> str:
        data: dict[str, Any] = self.model_dump(mode="json", exclude_none=True)
        return json.dumps(data, indent=indent, separators=(",", ":") if indent is None else None)


def load_workload(path: Path | str) -> BatsimWorkload:
    return BatsimWorkload.model_validate_json(Path(path).read_text(encoding="utf-8"))
