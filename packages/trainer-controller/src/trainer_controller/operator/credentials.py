"""How to reach the API server: from a kubeconfig file or the in-cluster service account."""

from __future__ import annotations

import ssl
from dataclasses import dataclass

import kopf
from kubernetes import client, config

__all__ = ["Credentials", "load_credentials"]


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
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def to_connection_info(self) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(
            server=self.server,
            token=self.token,
            ca_path=self.ca_path,
            insecure=self.insecure,
            certificate_path=self.certificate_path,
            private_key_path=self.private_key_path,
            default_namespace=self.default_namespace,
        )


def load_credentials(kubeconfig: str | None = None) -> Credentials:
    """The given kubeconfig; else in-cluster; else $KUBECONFIG or ~/.kube/config."""
    configuration = client.Configuration()
    namespace: str | None = None
    if kubeconfig is None:
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            kubeconfig = ""
    if kubeconfig is not None:
        config.load_kube_config(config_file=kubeconfig or None, client_configuration=configuration)
        _, active = config.list_kube_config_contexts(config_file=kubeconfig or None)
        namespace = (active.get("context") or {}).get("namespace")
    token = (configuration.api_key or {}).get("authorization") or (configuration.api_key or {}).get(
        "BearerToken"
    )
    if token and token.lower().startswith("bearer "):
        token = token[len("bearer ") :]
    return Credentials(
        server=configuration.host,
        token=token or None,
        ca_path=configuration.ssl_ca_cert,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
        insecure=not configuration.verify_ssl,
        default_namespace=namespace,
    )
