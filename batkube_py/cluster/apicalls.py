"""Kubernetes API calls as the adapter needs them: bounded retries, a few at once, and the run's cleanup."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException

from batkube_py.cluster.base import BackendError
from batkube_py.cluster.faults import FaultLog

log = logging.getLogger(__name__)

TRANSIENT = (429, 500, 502, 503, 504)


def _unreachable(exc: Exception) -> str:
    """The fault a failed connection shows: nothing listening, or no answer in time (a stalled etcd
    behind the apiserver looks like this)."""
    text = f"{type(exc).__name__}: {exc}"
    if "timed out" in text.lower() or "Timeout" in type(exc).__name__:
        return f"no answer within the client timeout ({type(exc).__name__})"
    cause = "ConnectionRefusedError" if "refused" in text.lower() else type(exc).__name__
    return f"unreachable ({cause})"


def transient(exc: ApiException) -> bool:
    """Overload and restarts (429/5xx), and the Priority admission plugin refusing a pod whose
    PriorityClass was created a moment ago (403 "no PriorityClass with name ... was found": its
    informer has not seen the class yet)."""
    if exc.status in TRANSIENT:
        return True
    return exc.status == 403 and "no PriorityClass with name" in str(exc.body or "")


class ApiCalls:
    """Retries what a restarting apiserver, a stalled etcd or an overloaded apiserver (429/5xx) makes
    fail until `patience` seconds have passed since the call began (at least one retry; with `retries`,
    after that many retries instead: tests), then fails with one line naming the fault; every failure and
    retry goes to the run's FaultLog. Remembers that an outage happened (the settle policy's event counts
    are then off until it rebases them), and when the last call returned.

    A retried create may find its pod already there (the first attempt reached the apiserver but its
    answer did not come back): callers pass `ok=(409,)` where that is the pod they asked for."""

    def __init__(self, retries: int | None = None, parallel: int = 4, patience: float = 60.0,
                 faults: FaultLog | None = None):  # fmt: skip
        self.retries, self.patience = retries, patience
        self.faults = faults or FaultLog()
        self.diagnose: Callable[[], str] = lambda: ""  # the control plane's processes, for the last line
        self.gave_up: str | None = None  # once one call gave up, the others fail at once
        self.outage = False
        self.last_return = time.monotonic()
        self._parallel = parallel
        self._pool: ThreadPoolExecutor | None = None
        self._fifo: ThreadPoolExecutor | None = None
        self._pending: list[Future] = []

    def __call__(
        self, what: str, fn: Callable[..., Any], *args: Any, ok: tuple[int, ...] = (), **kw: Any
    ) -> Any:
        delay, attempt, began = 0.05, 0, time.monotonic()
        while True:
            if self.gave_up:
                raise BackendError(self.gave_up)
            try:
                out = fn(*args, _request_timeout=10, **kw)
            except ApiException as exc:
                if exc.status not in ok and not transient(exc):
                    raise BackendError(f"Kubernetes API: {what} failed: {exc.status} {exc.reason}") from None
                out, fault = None, None if exc.status in ok else f"answered {exc.status} {exc.reason}"
            except (urllib3.exceptions.HTTPError, OSError) as exc:
                self.outage = True
                fault = _unreachable(exc)
            else:
                fault = None
            if fault is None:
                self.last_return = time.monotonic()
                self.faults.ok("kube-apiserver")
                return out
            attempt += 1
            waited = time.monotonic() - began
            spent = attempt > self.retries if self.retries is not None else waited >= self.patience
            if spent and attempt > 1 or self.retries == 0:
                why = self.diagnose()
                tried = f"{what}: {attempt} attempts in {waited:.0f} s" + (f"; {why}" if why else "")
                line = self.faults.fatal("kube-apiserver", fault, tried)
                down = fault.startswith(("unreachable", "no answer"))
                hint = "; is the apiserver up? (`batkube controlplane status`)" if down else ""
                state = "unreachable" if down else "failing"
                self.gave_up = f"Kubernetes API {state}: {line}{hint}"
                raise BackendError(self.gave_up) from None
            self.faults.failed("kube-apiserver", fault, what, f"retry {attempt} in {delay:.2f} s")
            time.sleep(delay)
            delay = min(delay * 2, 1.0)

    def all(self, calls: Sequence[tuple[str, Callable[..., Any], tuple, dict]]) -> None:
        """Independent calls (whose order nobody can observe), a few in flight at once; returns once
        they, and any started before with `later`, are done."""
        for what, fn, args, kw in calls:
            self.later(what, fn, *args, **kw)
        self.drain()

    def later(self, what: str, fn: Callable[..., Any], *args: Any, ordered: bool = False, **kw: Any) -> None:
        """Start a call without waiting for it: `ordered` calls reach the apiserver one after the other in
        the order given (pods created: the scheduler's queue orders them by arrival), the others a few
        at once. `drain` waits for them all and raises the first failure."""
        if ordered:
            if self._fifo is None:
                self._fifo = ThreadPoolExecutor(1, thread_name_prefix="batkube-api-fifo")
            pool = self._fifo
        else:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self._parallel, thread_name_prefix="batkube-api")
            pool = self._pool
        self._pending.append(pool.submit(self, what, fn, *args, **kw))

    def drain(self) -> None:
        pending, self._pending = self._pending, []
        errors = [f.exception() for f in pending]
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first

    def cancel(self) -> None:
        """Drop the calls not started yet (those in flight end within their timeout), without waiting."""
        pending, self._pending = self._pending, []
        for f in pending:
            f.cancel()

    def close(self, cancel: bool = False) -> None:
        """Wait for the calls started with `later`; `cancel`: only for those already in flight."""
        for pool in (self._pool, self._fifo):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=cancel)
        self._pool = self._fifo = None


def cleanup(api: client.ApiClient, namespace: str, selector: str, timeout: float = 30) -> None:
    """Delete the run's nodes, pods, namespace and priority classes, logging (not raising) what fails; once
    the apiserver does not answer, the rest is left (a run stopped by an outage must not hang on it)."""
    core, sched, groups = client.CoreV1Api(api), client.SchedulingV1Api(api), client.SchedulingV1beta1Api(api)
    ns, t = namespace, {"_request_timeout": timeout}
    steps = [
        ("nodes", lambda: core.delete_collection_node(label_selector=selector, **t)),
        # no controller-manager, so no namespace controller: empty and finalize the namespace ourselves
        ("pods", lambda: core.delete_collection_namespaced_pod(ns, grace_period_seconds=0, **t)),
        ("pod groups", lambda: groups.delete_collection_namespaced_pod_group(ns, **t)),
        ("namespace", lambda: core.delete_namespace(ns, grace_period_seconds=0, **t)),
        ("finalize", lambda: core.replace_namespace_finalize(
            ns, {"metadata": {"name": ns}, "spec": {"finalizers": []}}, **t)),
        ("priority classes", lambda: sched.delete_collection_priority_class(label_selector=selector, **t)),
    ]  # fmt: skip
    for what, step in steps:
        try:
            step()
        except ApiException as exc:
            if exc.status != 404:
                log.error("cleanup of %s (namespace %s, label %s) failed: %s", what, ns, selector, exc.reason)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            log.error("cleanup of %s (namespace %s, label %s) failed: %s; the rest is left: delete the "
                      "namespace and the nodes labelled %s by hand", what, ns, selector, exc, selector)
            return


def log_pending(core: client.CoreV1Api, namespace: str, names: list[str]) -> None:
    """What the apiserver says about the pods the scheduler left waiting, for the post-mortem."""
    for name in names:
        try:
            pod = core.read_namespaced_pod(name, namespace, _request_timeout=5)
        except (ApiException, urllib3.exceptions.HTTPError, OSError) as exc:
            log.error("pending pod %s: cannot read it (%s)", name, exc)
            continue
        conds = [(c.type, c.status, c.reason) for c in pod.status.conditions or []]
        log.error("pending pod %s: node=%r scheduler=%s rv=%s conditions=%s", name, pod.spec.node_name,
                  pod.spec.scheduler_name, pod.metadata.resource_version, conds)  # fmt: skip
