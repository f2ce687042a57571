"""out_jobs.csv / out_schedule.csv in Batsim 4.2.1's exact format (export.cpp).

Rows are produced when the server learns of a completion or rejection (that is the
order of Batsim's file), means divide by nb_jobs *including* rejected jobs, and
killed counts both COMPLETED_KILLED and COMPLETED_WALLTIME_REACHED.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from batkube_py.protocol.intervals import procset

from .workload import Job

JOBS_HEADER = ("job_id,workload_name,profile,submission_time,requested_number_of_resources,requested_time,"
               "success,final_state,starting_time,execution_time,finish_time,waiting_time,turnaround_time,"
               "stretch,allocated_resources,consumed_energy,metadata")
SCHEDULE_KEYS = ("batsim_version", "consumed_joules", "makespan", "max_slowdown", "max_turnaround_time",
                 "max_waiting_time", "mean_slowdown", "mean_turnaround_time", "mean_waiting_time",
                 "nb_computing_machines", "nb_grouped_switches", "nb_jobs", "nb_jobs_finished",
                 "nb_jobs_killed",
                 "nb_jobs_rejected", "nb_jobs_success", "nb_machine_switches", "scheduling_time",
                 "simulation_time", "success_rate", "time_computing", "time_idle", "time_sleeping",
                 "time_switching_off", "time_switching_on", "time_unavailable")


def _fmt(v: float | int | str) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    return "-nan" if v != v else f"{v:f}"


def hyphen(ids: list[int]) -> str:
    return str(procset(ids)) if ids else ""


NULL_RUNTIME = 1e-5  # Batsim's epsilon for a job that ran in no time (a parallel task with no work)


def job_runtime(job: Job) -> float:
    """The runtime Batsim records (jobs_execution.cpp): the clock difference, or 1e-5 s when it is 0,
    which then moves the job's finish_time (start + runtime) and the makespan."""
    runtime = job.finish - job.start
    return runtime if runtime != 0 else NULL_RUNTIME


@dataclass
class JobsTracer:
    rows: list[str] = field(default_factory=list)
    nb_jobs: int = 0
    finished: int = 0
    success: int = 0
    killed: int = 0
    rejected: int = 0
    makespan: float = 0.0
    sum_wait: float = 0.0
    sum_turn: float = 0.0
    sum_slow: float = 0.0
    max_wait: float = 0.0
    max_turn: float = 0.0
    max_slow: float = 0.0

    def write_job(self, job: Job) -> None:
        self.nb_jobs += 1
        head = (f"{job.name},{job.workload},{job.profile},{job.subtime:f},{job.res},{job.walltime:f},"
                f"{1 if job.state == 'COMPLETED_SUCCESSFULLY' else 0},{job.state}")
        if job.state == "REJECTED":
            self.rejected += 1
            self.rows.append(head + f',,,,,,,,,"{job.metadata}"')
            return
        runtime = job_runtime(job)
        finish = job.start + runtime
        wait = job.start - job.subtime
        turn = finish - job.subtime
        stretch = turn / runtime
        self.finished += 1
        self.success += job.state == "COMPLETED_SUCCESSFULLY"
        self.killed += job.state in ("COMPLETED_KILLED", "COMPLETED_WALLTIME_REACHED")
        self.makespan = max(self.makespan, finish)
        self.sum_wait += wait
        self.sum_turn += turn
        self.sum_slow += stretch
        self.max_wait = max(self.max_wait, wait)
        self.max_turn = max(self.max_turn, turn)
        self.max_slow = max(self.max_slow, stretch)
        self.rows.append(head + f",{job.start:f},{runtime:f},{finish:f},{wait:f},{turn:f},{stretch:f},"
                         f'{hyphen(job.alloc)},-1.000000,"{job.metadata}"')

    def jobs_csv(self) -> str:
        return "\n".join([JOBS_HEADER, *self.rows]) + "\n"

    def schedule_values(self, nb_machines: int, time_computing: float, time_idle: float,
                        scheduling_time: float, simulation_time: float) -> dict[str, str]:
        n = self.nb_jobs
        nan = float("nan")  # Batsim divides 0/0 and glibc prints "-nan"
        mean = (lambda s: s / n) if n else (lambda s: nan)
        vals: dict[str, float | int | str] = {
            "batsim_version": "4.2.1", "consumed_joules": 0.0, "makespan": self.makespan,
            "max_slowdown": self.max_slow, "max_turnaround_time": self.max_turn,
            "max_waiting_time": self.max_wait, "mean_slowdown": mean(self.sum_slow),
            "mean_turnaround_time": mean(self.sum_turn), "mean_waiting_time": mean(self.sum_wait),
            "nb_computing_machines": nb_machines, "nb_grouped_switches": 0, "nb_jobs": n,
            "nb_jobs_finished": self.finished, "nb_jobs_killed": self.killed,
            "nb_jobs_rejected": self.rejected,
            "nb_jobs_success": self.success, "nb_machine_switches": 0, "scheduling_time": scheduling_time,
            "simulation_time": simulation_time, "success_rate": (self.success / n) if n else nan,
            "time_computing": time_computing, "time_idle": time_idle, "time_sleeping": 0.0,
            "time_switching_off": 0.0, "time_switching_on": 0.0, "time_unavailable": 0.0,
        }
        return {k: _fmt(v) for k, v in vals.items()}

    def schedule_csv(self, values: dict[str, str]) -> str:
        return ",".join(SCHEDULE_KEYS) + "\n" + ",".join(values[k] for k in SCHEDULE_KEYS) + "\n"
