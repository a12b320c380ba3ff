"""How to reach the API server: a kubeconfig or the in-cluster service account.

Which one is ``trainer_api.kubeconfig``'s rule, kubectl's, the same as the SDK's: ``--kubeconfig``,
else ``$KUBECONFIG`` merged, else ``~/.kube/config``, else in-cluster. No Kubernetes client (125 MB
installed): the operator needs only the server, the CA, and a token or client certificate.
Certificate and key data embedded in a kubeconfig are written to private files, as ``ssl`` loads
them from files.
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
from typing import Any

from trainer_api.kubeconfig import (
    SERVICE_ACCOUNT_DIR,
    InCluster,
    Kubeconfig,
    KubeconfigError,
    find_connection,
    kubeconfig_files,
)

__all__ = ["Credentials", "CredentialsError", "load_credentials"]


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


def load_credentials(
    kubeconfig: str | None = None,
    environ: Mapping[str, str] | None = None,
    home: Path | None = None,
    service_account: Path = SERVICE_ACCOUNT_DIR,
) -> Credentials:
    """The connection ``trainer_api.kubeconfig.find_connection`` finds, as credentials."""
    env = os.environ if environ is None else environ
    try:
        found = find_connection(kubeconfig, None, env, home, service_account)
    except KubeconfigError as error:
        raise CredentialsError(str(error)) from None
    if isinstance(found, InCluster):
        return Credentials(
            server=found.server,
            token=found.token_file.read_text().strip(),
            ca_path=str(found.ca_file),
            default_namespace=found.namespace,
        )
    if found is None:
        tried = os.pathsep.join(map(str, kubeconfig_files(kubeconfig, env, home or Path.home())[0]))
        raise CredentialsError(
            f"no cluster to connect to: no kubeconfig at {tried} and not in a cluster "
            f"(KUBERNETES_SERVICE_HOST unset or no service account token in {service_account}); "
            "pass --kubeconfig or set KUBECONFIG"
        )
    try:
        return _from_kubeconfig(found)
    except KubeconfigError as error:
        raise CredentialsError(str(error)) from None


def _from_kubeconfig(found: Kubeconfig) -> Credentials:
    """The selected context of a (merged) kubeconfig."""
    cluster, user = found.cluster(), found.user()
    server = cluster.get("server")
    if not server:
        raise CredentialsError(
            f"{found.source}: cluster {found.context().get('cluster')!r} has no server"
        )
    for unsupported in ("exec", "auth-provider"):
        if unsupported in user:
            raise CredentialsError(
                f"{found.source}: user {found.context().get('user')!r} logs in with "
                f"{unsupported!r}, which trainer-controller does not run; use a token or a "
                "client certificate"
            )
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token = Path(user["tokenFile"]).read_text().strip()
    return Credentials(
        server=str(server),
        token=token or None,
        ca_path=_file(cluster, "certificate-authority", found.source),
        certificate_path=_file(user, "client-certificate", found.source),
        private_key_path=_file(user, "client-key", found.source),
        insecure=bool(cluster.get("insecure-skip-tls-verify", False)),
        default_namespace=found.namespace,
        username=user.get("username"),
        password=user.get("password"),
    )


def _file(section: Mapping[str, Any], key: str, source: str) -> str | None:
    """The file ``key`` names (already absolute), or a private file of ``key-data``."""
    data = section.get(f"{key}-data")
    if data:
        try:
            content = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as error:
            raise CredentialsError(f"{source}: {key}-data is not base64: {error}") from None
        return str(_write_private(key, content))
    named = section.get(key)
    return str(named) if named else None


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
