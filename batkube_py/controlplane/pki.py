"""Certificates and tokens for a loopback-only control plane, made with the `openssl` CLI.

openssl rather than a Python crypto package because it is on every machine the project targets and
adds no dependency. Everything is valid for 127.0.0.1/localhost only, so a leaked file is worth nothing
off this host.
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
from pathlib import Path


class PkiError(RuntimeError):
    pass


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise PkiError(
            "`openssl` is not on PATH; install it (apt-get install openssl) to start a control plane"
        )
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PkiError(f"openssl {args[0]} failed: {proc.stderr.strip()[-500:]}")


def make_pki(d: Path) -> str:
    """CA, apiserver serving cert, service-account key pair and an admin token; returns the token."""
    d.mkdir(parents=True, exist_ok=True)
    if not (d / "ca.crt").exists():
        _openssl(
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "3650",
            "-subj",
            "/CN=batkube-ca",
            cwd=d,
        )
        (d / "san.cnf").write_text(
            "[v3]\nsubjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes.default.svc\n"
            "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
        )
        _openssl(
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "apiserver.key",
            "-out",
            "apiserver.csr",
            "-subj",
            "/CN=kube-apiserver",
            cwd=d,
        )
        _openssl(
            "x509",
            "-req",
            "-in",
            "apiserver.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "apiserver.crt",
            "-days",
            "3650",
            "-extfile",
            "san.cnf",
            "-extensions",
            "v3",
            cwd=d,
        )
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=d)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=d)
    tokens = d / "tokens.csv"
    if not tokens.exists():
        tokens.write_text(f'{secrets.token_hex(16)},batkube-admin,batkube-admin,"system:masters"\n')
        tokens.chmod(0o600)
    return tokens.read_text().split(",", 1)[0]


def kubeconfig(server: str, ca: Path, token: str) -> str:
    return (
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: batkube\n  cluster:\n    server: {server}\n    certificate-authority: {ca}\n"
        f"users:\n- name: batkube-admin\n  user:\n    token: {token}\n"
        "contexts:\n- name: batkube\n  context:\n    cluster: batkube\n    user: batkube-admin\n"
        "current-context: batkube\n"
    )
