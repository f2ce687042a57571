"""`batkube controlplane up|status|down` on loopback, and the cached build."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from apiserver_support import require_binaries, start
from click.testing import CliRunner

from batkube_py.cli.app import main
from batkube_py.controlplane import build


def _listeners(pids: list[int]) -> list[str]:
    """Local addresses the given processes listen on (TCP), from `ss`."""
    out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
    return [line.split()[3] for line in out.splitlines() if any(f"pid={p}," in line for p in pids)]


def test_build_is_cached_and_pinned():
    require_binaries()
    t0 = time.monotonic()
    bins = build.build()
    assert time.monotonic() - t0 < 5, "a second build must be a no-op"
    version = subprocess.run([str(bins.kube_scheduler), "--version"], capture_output=True, text=True).stdout
    assert bins.kube_scheduler.parent == build.bin_dir() and bins.clock
    assert build.kube_version() == build.DEFAULT_KUBE_VERSION == "v1.37.2" in version
    assert bins.version() == "v1.37.2"


def test_kube_versions_have_their_own_sources_and_cache(monkeypatch):
    """1.32.6 stays buildable beside 1.37.2: its own Go modules (etcd 3.5.21), its own binary directory."""
    monkeypatch.delenv("BATKUBE_KUBE_VERSION", raising=False)
    assert build.module_dirs("v1.37.2") == {"kube": "kube-v1.37.2", "etcd": "etcd-v3.7.0"}
    assert build.module_dirs("v1.32.6") == {"kube": "kube-v1.32.6", "etcd": "etcd-v3.5.21"}
    assert build.bin_dir("1.32.6").name.startswith("k8s-v1.32.6-etcd-v3.5.21-")
    assert build.bin_dir().name.startswith("k8s-v1.37.2-etcd-v3.7.0-")
    monkeypatch.setenv("BATKUBE_KUBE_VERSION", "1.32.6")
    assert build.kube_version() == "v1.32.6"
    result = CliRunner().invoke(main, ["controlplane", "build", "--kube-version", "1.30.0"])
    assert result.exit_code == 1 and "supported: v1.32.6, v1.37.2" in result.output
    assert "Traceback" not in result.output


def test_a_binary_built_from_the_same_sources_is_reused(tmp_path, monkeypatch):
    """Changing kube-scheduler's main gives a new binary directory; kube-apiserver and etcd, whose
    inputs did not change, are copied from the earlier build instead of rebuilt (~20 min cold)."""
    import shutil

    monkeypatch.setenv("BATKUBE_CACHE", str(tmp_path))
    v = build.DEFAULT_KUBE_VERSION
    old = tmp_path / "src" / "0123456789"
    for d in build.module_dirs(v).values():
        shutil.copytree(build.GOBUILD / d, old / d)
    main = old / build.module_dirs(v)["kube"] / "cmd" / "kube-scheduler" / "main.go"
    main.write_text(main.read_text() + "\n// an older main\n")
    earlier = tmp_path / "bin" / f"k8s-{v}-etcd-{build.ETCD_FOR[v]}-0123456789"
    earlier.mkdir(parents=True)
    for b in build.BINARIES:
        (earlier / b).write_text(b)
    out = build.bin_dir(v)
    out.mkdir(parents=True)
    assert build._reuse(out, v, "kube-apiserver") and build._reuse(out, v, "etcd")
    assert (out / "kube-apiserver").read_text() == "kube-apiserver"
    assert not build._reuse(out, v, "kube-scheduler") and not (out / "kube-scheduler").exists()


def test_up_status_down_loopback_only(tmp_path: Path):
    cp = start(tmp_path / "cp")
    try:
        runner = CliRunner()
        res = runner.invoke(main, ["controlplane", "status", "--dir", str(cp.dir)])
        assert res.exit_code == 0, res.output
        assert '"kube-scheduler": true' in res.output
        st = cp.state()
        assert st is not None and st.kubeconfig.is_file()
        addrs = _listeners(list(st.pids.values()))
        assert addrs, "the control plane listens somewhere"
        assert all(a.startswith("127.0.0.1:") for a in addrs), addrs
        from kubernetes import client, config

        api = config.new_client_from_config(config_file=str(st.kubeconfig))
        assert client.CoreV1Api(api).list_namespace().items
        api.close()
    finally:
        res = CliRunner().invoke(main, ["controlplane", "down", "--dir", str(cp.dir)])
    assert res.exit_code == 0
    assert not any(cp.running().values())
    res = CliRunner().invoke(main, ["controlplane", "status", "--dir", str(cp.dir)])
    assert res.exit_code == 1
    cp.down(remove=True)


def test_scheduler_facts_read_from_the_configuration(tmp_path):
    from batkube_py.controlplane.session import scheduler_facts

    assert scheduler_facts(None) == ({"default-scheduler"}, 10.0)
    cfg = tmp_path / "s.yaml"
    cfg.write_text("podMaxBackoffSeconds: 1\nprofiles:\n- schedulerName: a\n- {}\n")
    assert scheduler_facts(cfg) == ({"a", "default-scheduler"}, 1.0)


def test_backoff_stays_upstreams_where_the_queue_runs_on_the_simulated_clock(tmp_path):
    """With batkube's clock (--sync queue) backoff decides when pods are retried in simulated time: the
    control plane keeps upstream's 1 s / 10 s (a 1-s cap made kube-scheduler 1.37.2 retry pods the
    twin held back, issue 25). Without it backoff costs wall time only, and 1 s keeps steps short."""
    import yaml

    from batkube_py.controlplane.manager import ControlPlane, State

    written = {}
    for clock in (True, False):
        cp = ControlPlane(tmp_path / str(clock))
        cp.dir.mkdir()
        cp._bins = build.Binaries(Path("etcd"), Path("kube-apiserver"), Path("kube-scheduler"), clock)
        st = State(dir=cp.dir, kubeconfig=cp.dir / "kubeconfig", server="", etcd_port=1, apiserver_port=2,
                   scheduler_port=3)  # fmt: skip
        cp.write_scheduler_config(st, None)
        written[clock] = yaml.safe_load((cp.dir / "scheduler-config.yaml").read_text())
    assert "podMaxBackoffSeconds" not in written[True] and "podInitialBackoffSeconds" not in written[True]
    assert (written[False]["podInitialBackoffSeconds"], written[False]["podMaxBackoffSeconds"]) == (1, 1)


def test_missing_control_plane_skips_with_the_build_command_and_fails_in_ci(monkeypatch):
    import apiserver_support
    import pytest

    monkeypatch.setattr(build, "find_binaries", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BATKUBE_REQUIRE_CONTROLPLANE", raising=False)
    with pytest.raises(pytest.skip.Exception, match="run `batkube controlplane build`"):
        apiserver_support.require_binaries()
    for name, value in (("CI", "true"), ("BATKUBE_REQUIRE_CONTROLPLANE", "1")):
        with monkeypatch.context() as m:
            m.setenv(name, value)
            with pytest.raises(pytest.fail.Exception, match="batkube controlplane build"):
                apiserver_support.require_binaries()


def test_build_compiles_a_writable_copy_of_the_packaged_go_sources(tmp_path, monkeypatch):
    """An installed package may be read-only: the Go modules are copied under the cache and built there."""
    monkeypatch.setenv("BATKUBE_CACHE", str(tmp_path))
    src = build.sources()
    assert src.parent == tmp_path / "src"
    packaged = sorted(p.relative_to(build.GOBUILD) for p in build.GOBUILD.rglob("*") if p.is_file())
    cmd = Path("kube-v1.37.2/cmd/kube-scheduler")
    want = {Path("kube-v1.37.2/go.mod"), Path("etcd-v3.7.0/main.go"), cmd / "main.go", cmd / "control.go"}
    assert want <= {*packaged}
    copied = sorted(p.relative_to(src) for p in src.rglob("*") if p.is_file())
    assert copied == [p for p in packaged if p.parts[0] in ("kube-v1.37.2", "etcd-v3.7.0")]
    assert build.sources() == src  # a second call reuses the copy
    monkeypatch.setenv("PATH", str(tmp_path))  # no go
    result = CliRunner().invoke(main, ["controlplane", "build"])
    assert result.exit_code == 1 and "`go` is not on PATH" in result.output
    assert "Traceback" not in result.output



def test_nodes_are_ready_in_one_write_each_on_batkubes_control_plane(tmp_path):
    """Without the TaintNodesByCondition admission plugin (manager.py) a node created Ready carries no
    not-ready taint that only a node controller would lift: create_nodes writes each node once, with no
    patch, and the node keeps the run's own taint. A node another apiserver tainted still gets its patch."""
    from kubernetes import client, config

    from batkube_py.cluster.apicalls import ApiCalls
    from batkube_py.cluster.kubelet import NOT_READY, SIMULATED, _ready_fix, create_nodes
    from batkube_py.controlplane.kubehttp import KubeHttp

    cp = start(tmp_path / "cp")
    try:
        api = config.new_client_from_config(config_file=str(cp.state().kubeconfig))
        http, patches = KubeHttp(api), []
        patch = http.patch_node
        http.patch_node = lambda *a, **kw: patches.append(a) or patch(*a, **kw)  # type: ignore[method-assign]
        shape = {"cpu": "2", "memory": "4Gi", "pods": "110"}
        nodes = [client.V1Node(metadata=client.V1ObjectMeta(name=f"ready-{i}"), spec=client.V1NodeSpec(),
                               status=client.V1NodeStatus(capacity=shape, allocatable=shape))
                 for i in range(3)]  # fmt: skip
        create_nodes(nodes, "t", ApiCalls(), http)
        assert patches == []
        for node in nodes:
            made = client.CoreV1Api(api).read_node(node.metadata.name)
            assert [t.key for t in made.spec.taints or []] == [SIMULATED]
            assert [c.status for c in made.status.conditions if c.type == "Ready"] == ["True"]
        tainted = {"spec": {"taints": [{"key": NOT_READY, "effect": "NoSchedule"}]}}
        assert _ready_fix(nodes[0], tainted, http) is not None
        api.close()
    finally:
        cp.down(remove=True)
