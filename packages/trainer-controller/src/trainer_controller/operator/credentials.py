"""How to reach the API server: from a kubeconfig file or the in-cluster service account.

A small reader of its own instead of the Kubernetes client (125 MB installed): the operator needs
only the server, the CA, and a token or client certificate. Certificate and key data embedded in
a kubeconfig are written to private files, as ``ssl`` loads them from files.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import functools
import os
import shutil
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import kopf
import yaml

__all__ = ["Credentials", "CredentialsError", "load_credentials"]

SERVICE_ACCOUNT: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class CredentialsError(Exception):
    """No usable kubeconfig or in-cluster service account; the message says what was tried."""


@dataclass(frozen=True)
class Credentials:
    """The API server address and what to present to it."""

    server: str
    token: str | None = None
    ca_path: str | None = None
    certificate_path: str | None = None
    private_key_path: str | None = None
    insecure: bool = False
    default_namespace: str | None = None
    username: str | None = None
    password: str | None = None

    def ssl_context(self) -> ssl.SSLContext | bool:
        """For aiohttp: False for plain HTTP, else a context with the CA and client certificate."""
        if self.server.startswith("http://"):
            return False
        context = ssl.create_default_context(cafile=self.ca_path)
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if self.certificate_path:
            context.load_cert_chain(self.certificate_path, self.private_key_path)
        return context

    def headers(self) -> dict[str, str]:
        if self.token:
            return {"Authorization": f"Bearer {self.token}"}
        if self.username is not None:
            pair = f"{self.username}:{self.password or ''}".encode()
            return {"Authorization": f"Basic {base64.b64encode(pair).decode()}"}
        return {}

    def to_connection_info(self) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(
            server=self.server,
            token=self.token,
            username=self.username,
            password=self.password,
            ca_path=self.ca_path,
            insecure=self.insecure,
            certificate_path=self.certificate_path,
            private_key_path=self.private_key_path,
            default_namespace=self.default_namespace,
        )


def load_credentials(
    kubeconfig: str | None = None, environ: Mapping[str, str] | None = None
) -> Credentials:
    """The given kubeconfig; else in-cluster; else $KUBECONFIG or ~/.kube/config."""
    env = os.environ if environ is None else environ
    if kubeconfig is not None:
        return from_kubeconfig(Path(kubeconfig))
    if env.get("KUBERNETES_SERVICE_HOST") and (SERVICE_ACCOUNT / "token").is_file():
        return in_cluster(env, SERVICE_ACCOUNT)
    candidates = [Path(p) for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    candidates = candidates or [Path(env.get("HOME", "~"), ".kube", "config").expanduser()]
    for path in candidates:
        if path.is_file():
            return from_kubeconfig(path)
    tried = ", ".join(str(path) for path in candidates)
    raise CredentialsError(
        f"no cluster to connect to: not in a cluster (KUBERNETES_SERVICE_HOST unset or no "
        f"service account token in {SERVICE_ACCOUNT}) and no kubeconfig at {tried}; "
        "pass --kubeconfig or set KUBECONFIG"
    )


def in_cluster(environ: Mapping[str, str], account: Path) -> Credentials:
    """The pod's service account: its token, the cluster CA and its namespace."""
    host, port = environ["KUBERNETES_SERVICE_HOST"], environ.get("KUBERNETES_SERVICE_PORT", "443")
    host = f"[{host}]" if ":" in host else host
    namespace = account / "namespace"
    return Credentials(
        server=f"https://{host}:{port}",
        token=(account / "token").read_text().strip(),
        ca_path=str(account / "ca.crt"),
        default_namespace=namespace.read_text().strip() if namespace.is_file() else None,
    )


def from_kubeconfig(path: Path) -> Credentials:
    """The current context of the kubeconfig at ``path``."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as error:
        raise CredentialsError(f"kubeconfig {path}: cannot read it: {error}") from error
    if not isinstance(document, dict):
        raise CredentialsError(f"kubeconfig {path}: expected a mapping, got {document!r}")
    name = document.get("current-context")
    if not name:
        raise CredentialsError(f"kubeconfig {path}: current-context is not set")
    context = _named(document, "contexts", "context", name, path)
    cluster = _named(document, "clusters", "cluster", context.get("cluster"), path)
    user = (
        _named(document, "users", "user", context.get("user"), path) if context.get("user") else {}
    )
    server = cluster.get("server")
    if not server:
        raise CredentialsError(
            f"kubeconfig {path}: cluster {context.get('cluster')!r} has no server"
        )
    for unsupported in ("exec", "auth-provider"):
        if unsupported in user:
            raise CredentialsError(
                f"kubeconfig {path}: user {context.get('user')!r} logs in with {unsupported!r}, "
                "which trainer-controller does not run; use a token or a client certificate"
            )
    base = path.parent
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = (base / user["tokenFile"]).read_text().strip()
    return Credentials(
        server=str(server),
        token=token or None,
        ca_path=_file(cluster, "certificate-authority", base, path),
        certificate_path=_file(user, "client-certificate", base, path),
        private_key_path=_file(user, "client-key", base, path),
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        default_namespace=context.get("namespace"),
        username=user.get("username"),
        password=user.get("password"),
    )


def _named(
    document: Mapping[str, Any], section: str, field: str, name: object, path: Path
) -> dict[str, Any]:
    for entry in document.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            value = entry.get(field) or {}
            if isinstance(value, dict):
                return value
    raise CredentialsError(f"kubeconfig {path}: {section}: no entry named {name!r}")


def _file(section: Mapping[str, Any], key: str, base: Path, path: Path) -> str | None:
    """The file ``key`` names (relative to the kubeconfig), or a private file of ``key-data``."""
    data = section.get(f"{key}-data")
    if data:
        try:
            content = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as error:
            raise CredentialsError(
                f"kubeconfig {path}: {key}-data is not base64: {error}"
            ) from None
        return str(_write_private(key, content))
    named = section.get(key)
    return str(base / named) if named else None


@functools.cache
def _private_directory() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="trainer-controller-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


def _write_private(name: str, content: bytes) -> Path:
    """``content`` in a file only this user can read, removed when the process exits."""
    descriptor, file = tempfile.mkstemp(prefix=f"{name}-", dir=_private_directory())
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(content)
    return Path(file)
