"""Job fields that become Kubernetes objects, checked as the apiserver would before a pod exists.

A job carries user JSON (tolerations, affinity, selectors, labels) that the Kubernetes client's models
validate only by type, and that kube-apiserver validates further (operators, values, weights). Each
function returns None when the value is fine, else what was expected, so that the job alone is rejected
(REJECT_JOB, a row in rejected.csv) and the run goes on: one malformed job never ends a simulation.
"""

from __future__ import annotations

import re
from typing import Any

from kubernetes import client
from pydantic import ValidationError

_api = client.ApiClient()

_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_LABEL_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_LABEL_VALUE = re.compile(rf"^{_NAME}?$")
_NODE_OPS = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"}
_LABEL_OPS = {"In", "NotIn", "Exists", "DoesNotExist"}
_EFFECTS = {"", "NoSchedule", "PreferNoSchedule", "NoExecute"}
INT32 = 2**31 - 1


class FieldProblem(ValueError):
    """A value that Kubernetes would refuse; the message says what was expected and where."""


def k8s_object(value: Any, kind: str) -> Any:
    """The client's own JSON -> model mapping, with any failure as a FieldProblem."""
    try:
        return _api._ApiClient__deserialize(value, kind)  # the client's own JSON → model mapping
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"])
        raise FieldProblem(f"a Kubernetes {kind} ({loc + ': ' if loc else ''}{err['msg']})") from None
    except (TypeError, ValueError, AttributeError, KeyError, RecursionError) as exc:
        raise FieldProblem(f"a Kubernetes {kind} ({type(exc).__name__}: {str(exc)[:100]})") from None


def labels(value: dict[str, str], what: str = "label") -> None:
    for k, v in value.items():
        if len(k) > 317 or not _LABEL_KEY.match(k):
            raise FieldProblem(f"{what} keys like 'app' or 'example.com/tier' (got {k[:80]!r})")
        if not _LABEL_VALUE.match(v):
            raise FieldProblem(f"{what} values of at most 63 letters, digits, '-', '_', '.' (got {v[:80]!r})")


def toleration(t: client.V1Toleration) -> None:
    if t.operator not in (None, "Equal", "Exists"):
        raise FieldProblem(f"a toleration operator Equal or Exists (got {t.operator!r})")
    if t.operator == "Exists" and t.value:
        raise FieldProblem("no value with operator Exists")
    if (t.effect or "") not in _EFFECTS:
        raise FieldProblem(f"a toleration effect in {sorted(_EFFECTS - {''})} (got {t.effect!r})")


def _requirement(key: str | None, op: str | None, values: list[str] | None, ops: set[str]) -> None:
    if not key:
        raise FieldProblem("a non-empty key in every requirement")
    if op not in ops:
        raise FieldProblem(f"an operator in {sorted(ops)} (got {op!r})")
    if op in ("In", "NotIn") and not values:
        raise FieldProblem(f"values with operator {op}")
    if op in ("Exists", "DoesNotExist") and values:
        raise FieldProblem(f"no values with operator {op}")
    if op in ("Gt", "Lt") and len(values or ()) != 1:
        raise FieldProblem(f"exactly one value with operator {op}")


def label_selector(sel: client.V1LabelSelector | None) -> None:
    if sel is None:
        return
    labels(sel.match_labels or {}, "matchLabels")
    for e in sel.match_expressions or []:
        _requirement(e.key, e.operator, e.values, _LABEL_OPS)


def _node_term(term: client.V1NodeSelectorTerm) -> None:
    for r in term.match_expressions or []:
        _requirement(r.key, r.operator, r.values, _NODE_OPS)
    for r in term.match_fields or []:
        _requirement(r.key, r.operator, r.values, _NODE_OPS)


def _weight(w: int | None) -> None:
    if w is None or not 1 <= w <= 100:
        raise FieldProblem(f"a preference weight in 1-100 (got {w!r})")


def _pod_term(term: client.V1PodAffinityTerm) -> None:
    if not term.topology_key:
        raise FieldProblem("a non-empty topologyKey in every pod affinity term")
    label_selector(term.label_selector)
    label_selector(term.namespace_selector)


def affinity(a: client.V1Affinity) -> None:
    na = a.node_affinity
    if na is not None:
        req = na.required_during_scheduling_ignored_during_execution
        for term in req.node_selector_terms if req is not None else []:
            _node_term(term)
        for pref in na.preferred_during_scheduling_ignored_during_execution or []:
            _weight(pref.weight)
            if pref.preference is not None:
                _node_term(pref.preference)
    for pa in (a.pod_affinity, a.pod_anti_affinity):
        if pa is None:
            continue
        for term in pa.required_during_scheduling_ignored_during_execution or []:
            _pod_term(term)
        for pref in pa.preferred_during_scheduling_ignored_during_execution or []:
            _weight(pref.weight)
            if pref.pod_affinity_term is None:
                raise FieldProblem("a podAffinityTerm in every weighted term")
            _pod_term(pref.pod_affinity_term)


def spread(c: client.V1TopologySpreadConstraint) -> None:
    if c.max_skew is None or not 0 < c.max_skew <= INT32:
        raise FieldProblem(f"maxSkew in 1-{INT32} (got {c.max_skew!r})")
    if not c.topology_key:
        raise FieldProblem("a non-empty topologyKey")
    if c.when_unsatisfiable not in ("DoNotSchedule", "ScheduleAnyway"):
        raise FieldProblem(f"whenUnsatisfiable DoNotSchedule or ScheduleAnyway, got {c.when_unsatisfiable!r}")
    if c.min_domains is not None and not 0 < c.min_domains <= INT32:
        raise FieldProblem(f"minDomains in 1-{INT32} (got {c.min_domains!r})")
    label_selector(c.label_selector)
