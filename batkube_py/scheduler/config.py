"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), read as kube-scheduler reads it.

`load_config(path)` parses and validates a YAML file; `default_config()` is what an empty file gives;
`build_profiles(config, seed)` turns it into framework Profiles. Defaulting follows upstream v1
(SetDefaults_KubeSchedulerConfiguration, mergePlugins, the framework's MultiPoint expansion and score
weights), so a profile that disables, re-weights or re-orders plugins behaves as it would in the
kube-scheduler release the twin follows (versions.py: 1.32.6 or 1.37.2).
Decoding is strict like kube-scheduler's: an unknown field is an error, reported with its path.

Custom plugins: a Python class deriving from framework.Plugin is usable by its import path
"package.module:Class" directly as a plugin name, or registered under its `name` attribute by listing
the path in the top-level `x-batkube-plugins` list. It is built as `Class(args)` with its pluginConfig
args (a dict) when there are some, else `Class()`.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from batkube_py import safeyaml
from batkube_py.scheduler.batching import batching_live, refusal
from batkube_py.scheduler.framework import Plugin, PreemptionArgs, Profile
from batkube_py.scheduler.multipoint import expand, merge, points_of
from batkube_py.scheduler.pluginargs import ARGS, DefaultPreemptionArgs
from batkube_py.scheduler.plugins import ONLY_137, REGISTRY, build_plugin
from batkube_py.scheduler.versions import DEFAULT_KUBE_VERSION, KubeVersion, default_multipoint

API_VERSION = "kubescheduler.config.k8s.io/v1"
DEFAULT_SCHEDULER = "default-scheduler"
POINTS = (
    "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
    "reserve", "permit", "preBind", "bind", "postBind",
)  # fmt: skip
MODELLED_POINTS = ("preFilter", "filter", "preScore", "score")
REMOVED_PLUGINS = {"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"}


class ConfigError(ValueError):
    """An invalid configuration; the message lists every problem as `field.path: reason`."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PluginRef(_Strict):
    name: str
    weight: int = 0


class PluginSet(_Strict):
    enabled: list[PluginRef] = Field(default_factory=list)
    disabled: list[PluginRef] = Field(default_factory=list)


class Plugins(_Strict):
    multiPoint: PluginSet = Field(default_factory=PluginSet)
    preEnqueue: PluginSet = Field(default_factory=PluginSet)
    queueSort: PluginSet = Field(default_factory=PluginSet)
    preFilter: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    postFilter: PluginSet = Field(default_factory=PluginSet)
    preScore: PluginSet = Field(default_factory=PluginSet)
    score: PluginSet = Field(default_factory=PluginSet)
    reserve: PluginSet = Field(default_factory=PluginSet)
    permit: PluginSet = Field(default_factory=PluginSet)
    preBind: PluginSet = Field(default_factory=PluginSet)
    bind: PluginSet = Field(default_factory=PluginSet)
    postBind: PluginSet = Field(default_factory=PluginSet)


class PluginConfig(_Strict):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class KubeSchedulerProfile(_Strict):
    schedulerName: str = DEFAULT_SCHEDULER
    percentageOfNodesToScore: int | None = None
    plugins: Plugins = Field(default_factory=Plugins)
    pluginConfig: list[PluginConfig] = Field(default_factory=list)


class KubeSchedulerConfiguration(_Strict):
    apiVersion: Literal["kubescheduler.config.k8s.io/v1"]
    kind: Literal["KubeSchedulerConfiguration"]
    parallelism: int = 16
    percentageOfNodesToScore: int | None = None
    podInitialBackoffSeconds: int = 1
    podMaxBackoffSeconds: int = 10
    profiles: list[KubeSchedulerProfile] = Field(default_factory=lambda: [KubeSchedulerProfile()])
    extenders: list[dict[str, Any]] = Field(default_factory=list)
    plugin_imports: list[str] = Field(default_factory=list, alias="x-batkube-plugins")
    # Accepted for compatibility with real kube-scheduler files; meaningless in a simulation.
    leaderElection: dict[str, Any] | None = None
    clientConnection: dict[str, Any] | None = None
    healthzBindAddress: str | None = None
    metricsBindAddress: str | None = None
    enableProfiling: bool | None = None
    enableContentionProfiling: bool | None = None
    delayCacheUntilActive: bool | None = None


@dataclass
class ProfileSpec:
    """One validated profile, its plugins resolved per extension point (upstream order)."""

    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    points: dict[str, list[str]]  # extension point → plugin names, after merge and MultiPoint expansion
    weights: dict[str, int]  # score plugin → weight
    args: dict[str, Any]  # plugin name → typed args (pluginargs) or a raw dict for custom plugins
    preemption: DefaultPreemptionArgs | None  # None when DefaultPreemption is not a PostFilter plugin


@dataclass
class SchedulerConfig:
    profiles: list[ProfileSpec]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff: float = 1.0
    pod_max_backoff: float = 10.0
    parallelism: int = 16
    registry: dict[str, type[Plugin]] = field(default_factory=dict)
    kube_version: KubeVersion = DEFAULT_KUBE_VERSION

    @property
    def preemption(self) -> dict[str, DefaultPreemptionArgs | None]:
        """schedulerName → DefaultPreemption args (None where preemption is disabled)."""
        return {p.scheduler_name: p.preemption for p in self.profiles}


# ---- loading ------------------------------------------------------------------------------------------


def _path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def load_config(path: str | Path, kube_version: KubeVersion = DEFAULT_KUBE_VERSION) -> SchedulerConfig:
    """Bounded like all user YAML (safeyaml: aliases, depth, encoding): a hostile file fails in one line."""
    try:
        doc = safeyaml.load_file(Path(path))
    except safeyaml.YamlError as exc:
        raise ConfigError(str(exc)) from None
    return parse_config(doc if doc is not None else {}, kube_version)


def default_config(kube_version: KubeVersion = DEFAULT_KUBE_VERSION) -> SchedulerConfig:
    return parse_config({"apiVersion": API_VERSION, "kind": "KubeSchedulerConfiguration"}, kube_version)


def parse_config(doc: Any, kube_version: KubeVersion = DEFAULT_KUBE_VERSION) -> SchedulerConfig:
    """As kube-scheduler `kube_version` reads it: that release's default plugins and plugin names."""
    if not isinstance(doc, dict):
        raise ConfigError("the configuration must be a mapping (a KubeSchedulerConfiguration)")
    try:
        cfg = KubeSchedulerConfiguration.model_validate(doc)
    except ValidationError as exc:
        raise ConfigError("\n".join(f"{_path(e['loc'])}: {_msg(e)}" for e in exc.errors())) from None
    errors: list[str] = []
    registry = {n: c for n, c in REGISTRY.items() if kube_version == "1.37" or n not in ONLY_137}
    for i, spec in enumerate(cfg.plugin_imports):
        cls = _import(spec, f"x-batkube-plugins[{i}]", errors)
        if cls is not None:
            registry[cls.name] = registry[spec] = cls
    _check_top(cfg, errors)
    profiles = []
    seen: dict[str, int] = {}
    for i, prof in enumerate(cfg.profiles):
        where = f"profiles[{i}]"
        if prof.schedulerName in seen:
            errors.append(f"{where}.schedulerName: Duplicate value: profiles[{seen[prof.schedulerName]}]")
        seen.setdefault(prof.schedulerName, i)
        spec = _profile(prof, where, registry, errors, default_multipoint(kube_version))
        if spec is not None:
            profiles.append(spec)
            if kube_version == "1.37" and batching_live(spec.points, spec.args, registry, REGISTRY):
                errors.append(refusal(where, spec.scheduler_name))
    if errors:
        raise ConfigError("\n".join(errors))
    return SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=cfg.percentageOfNodesToScore or 0,
        pod_initial_backoff=float(cfg.podInitialBackoffSeconds),
        pod_max_backoff=float(cfg.podMaxBackoffSeconds),
        parallelism=cfg.parallelism,
        registry=registry,
        kube_version=kube_version,
    )


def _msg(e: dict) -> str:
    msg = str(e.get("msg", ""))
    return msg.removeprefix("Value error, ")


def _import(spec: str, where: str, errors: list[str]) -> type[Plugin] | None:
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        errors.append(f"{where}: {spec!r} is not an import path of the form 'package.module:Class'")
        return None
    try:
        cls = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        errors.append(f"{where}: cannot import {spec!r} ({exc})")
        return None
    if not (isinstance(cls, type) and issubclass(cls, Plugin) and cls.name):
        errors.append(f"{where}: {spec!r} is not a framework.Plugin subclass with a name")
        return None
    return cls


def _check_top(cfg: KubeSchedulerConfiguration, errors: list[str]) -> None:
    if cfg.parallelism <= 0:
        errors.append("parallelism: should be an integer value greater than zero")
    if cfg.percentageOfNodesToScore is not None and not 0 <= cfg.percentageOfNodesToScore <= 100:
        errors.append("percentageOfNodesToScore: not in valid range [0-100]")
    if cfg.podInitialBackoffSeconds <= 0:
        errors.append("podInitialBackoffSeconds: must be greater than 0")
    if cfg.podMaxBackoffSeconds < cfg.podInitialBackoffSeconds:
        errors.append("podMaxBackoffSeconds: must be greater than or equal to PodInitialBackoffSeconds")
    if cfg.extenders:
        errors.append("extenders: not supported by the embedded scheduler (use a Python plugin instead)")
    if not cfg.profiles:
        errors.append("profiles: Required value")
    queue_sorts = {tuple(p.name for p in prof.plugins.queueSort.enabled) for prof in cfg.profiles}
    if len(queue_sorts) > 1:
        errors.append("profiles: plugins.queueSort must be the same for all profiles")


# ---- one profile -----------------------------------------------------------------------------------------


def _resolve(name: str, registry: dict[str, type[Plugin]], where: str, errors: list[str]) -> type | None:
    cls = registry.get(name)
    if cls is None and ":" in name:
        cls = _import(name, where, errors)
        if cls is not None:
            registry[name] = cls
        return cls
    if cls is None:
        if name in REMOVED_PLUGINS:
            errors.append(f'{where}: {name} was invalid in version "{API_VERSION}"')
        else:
            errors.append(f"{where}: unknown plugin {name!r} (known: {', '.join(sorted(REGISTRY))})")
    return cls


def _profile(
    prof: KubeSchedulerProfile,
    where: str,
    registry: dict,
    errors: list[str],
    multipoint: list[tuple[str, int]],
) -> ProfileSpec | None:
    n_errors = len(errors)
    if not prof.schedulerName:
        errors.append(f"{where}.schedulerName: Required value")
    pct = prof.percentageOfNodesToScore
    if pct is not None and not 0 <= pct <= 100:
        errors.append(f"{where}.percentageOfNodesToScore: not in valid range [0-100]")
    plugins = prof.plugins
    defaults = [PluginRef(name=n, weight=w) for n, w in multipoint]
    multi, multi_disabled = merge(defaults, plugins.multiPoint)
    merged: dict[str, tuple[list[PluginRef], set[str]]] = {"multiPoint": (multi, multi_disabled)}
    for point in POINTS:
        merged[point] = merge([], getattr(plugins, point))
    classes: dict[str, type[Plugin]] = {}
    for point, (enabled, _) in merged.items():
        for j, ref in enumerate(enabled):
            loc = f"{where}.plugins.{point}.enabled[{j}]"
            if not 0 <= ref.weight <= 100:
                errors.append(f"{loc}.weight: must be in 1..100 (0 or omitted means 1)")
            cls = _resolve(ref.name, registry, f"{loc}.name", errors)
            if cls is None:
                continue
            classes[ref.name] = cls
            if point != "multiPoint" and point not in points_of(cls):
                errors.append(f"{loc}.name: plugin {ref.name!r} does not extend {point}")
            elif point not in ("multiPoint", *MODELLED_POINTS) and ref.name not in REGISTRY:
                errors.append(f"{loc}.name: custom {point} plugins are not supported by the embedded twin")
    points = {point: expand(point, merged, classes, where, errors) for point in POINTS}
    weights: dict[str, int] = {}
    for ref in merged["score"][0] + merged["multiPoint"][0]:
        if ref.name in classes and "score" in points_of(classes[ref.name]) and ref.name not in weights:
            weights[ref.name] = ref.weight or 1
    args = _args(prof, where, classes, errors)
    if len(errors) > n_errors:
        return None
    preemption = args.get("DefaultPreemption") if "DefaultPreemption" in points["postFilter"] else None
    return ProfileSpec(prof.schedulerName, pct, points, weights, args, preemption)


def _args(prof: KubeSchedulerProfile, where: str, classes: dict, errors: list[str]) -> dict[str, Any]:
    raw: dict[str, tuple[int, dict]] = {}
    for i, pc in enumerate(prof.pluginConfig):
        if pc.name in raw:
            errors.append(f"{where}.pluginConfig[{i}]: Duplicate value: {pc.name!r}")
        raw[pc.name] = (i, pc.args)
    out: dict[str, Any] = {}
    for name, model in ARGS.items():
        i, given = raw.get(name, (None, {}))
        try:
            out[name] = model.model_validate(given)
        except ValidationError as exc:
            base = f"{where}.pluginConfig[{i}].args"
            errors += [f"{base}{'.' if e['loc'] else ''}{_path(e['loc'])}: {_msg(e)}" for e in exc.errors()]
    for name, (i, given) in raw.items():
        if name not in ARGS:
            if name not in classes and name not in REGISTRY:
                errors.append(f"{where}.pluginConfig[{i}].name: unknown plugin {name!r}")
            out[name] = given
    return out


# ---- profiles ------------------------------------------------------------------------------------------


def build_profiles(config: SchedulerConfig, seed: int) -> list[Profile]:
    """Framework profiles, one plugin instance per name shared by its extension points, as upstream.

    Each profile draws ties from its own generator, seeded by (seed, profile index), so adding a profile
    never changes another profile's choices; the order its parallel Filter workers find nodes in comes
    from a second one, so that drawing it leaves the ties and preemption offsets of 1.32 runs as they were.
    """
    out = []
    for k, spec in enumerate(config.profiles):
        names = {n for ns in spec.points.values() for n in ns}
        instances = {n: build_plugin(config.registry[n], n, spec.args.get(n)) for n in sorted(names)}
        for plugin in instances.values():
            plugin.kube_version = config.kube_version
        weights = spec.weights
        pct = spec.percentage_of_nodes_to_score
        out.append(
            Profile(
                scheduler_name=spec.scheduler_name,
                filters=[instances[n] for n in spec.points["filter"] if instances[n].filters],
                scorers=[(instances[n], weights[n]) for n in spec.points["score"] if instances[n].scores],
                rng=np.random.default_rng(np.random.SeedSequence([seed, k])),
                kube_version=config.kube_version,
                parallelism=config.parallelism,
                order_rng=np.random.default_rng(np.random.SeedSequence([seed, k, 1])),
                percentage_of_nodes_to_score=config.percentage_of_nodes_to_score if pct is None else pct,
                preemption=None
                if spec.preemption is None
                else PreemptionArgs(
                    spec.preemption.minCandidateNodesPercentage, spec.preemption.minCandidateNodesAbsolute
                ),
                pre_filters=[
                    instances[n]
                    for n in spec.points["preFilter"]
                    if type(instances[n]).pre_filter is not Plugin.pre_filter
                ],
            )
        )
    return out
