"""TLS for the webhooks and the progress endpoint: a self-made CA and serving certificate kept in
a Secret (shared by every replica) with the webhook configurations' ``caBundle`` patched to match,
or files mounted by cert-manager (``tls.crt``, ``tls.key``, ``ca.crt``).
"""

from __future__ import annotations

import base64
import ipaddress
import logging
import os
import ssl
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from trainer_controller.operator.apiclient import KubeClient, resource_path, retry_on_conflict

__all__ = [
    "ServingCertificate",
    "ensure_secret",
    "generate_certificate",
    "load_certificate_dir",
    "patch_ca_bundles",
]

logger = logging.getLogger(__name__)

VALIDITY: Final = timedelta(days=3650)
RENEW_BEFORE: Final = timedelta(days=30)


@dataclass(frozen=True)
class ServingCertificate:
    """PEM-encoded CA certificate, serving certificate and its private key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def ssl_context(self) -> ssl.SSLContext:
        """A server-side TLS context presenting this certificate."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        with (
            tempfile.TemporaryDirectory() as directory
        ):  # the ssl module only loads keys from files
            cert, key = Path(directory, "tls.crt"), Path(directory, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            os.chmod(key, 0o600)
            context.load_cert_chain(cert, key)
        return context

    def not_after(self) -> datetime:
        return x509.load_pem_x509_certificate(self.cert_pem).not_valid_after_utc

    def names(self) -> set[str]:
        certificate = x509.load_pem_x509_certificate(self.cert_pem)
        alternative = certificate.extensions.get_extension_for_class(
            x509.SubjectAlternativeName
        ).value
        return {str(name) for name in alternative.get_values_for_type(x509.DNSName)}


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def service_names(service: str, namespace: str) -> list[str]:
    return [
        service,
        f"{service}.{namespace}",
        f"{service}.{namespace}.svc",
        f"{service}.{namespace}.svc.cluster.local",
    ]


def generate_certificate(
    service: str, namespace: str, now: datetime, extra_names: tuple[str, ...] = ("localhost",)
) -> ServingCertificate:
    """A new CA and a serving certificate for the Service's names, ``extra_names``, 127.0.0.1."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("trainer-controller-ca"))
        .issuer_name(_name("trainer-controller-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names = [*service_names(service, namespace), *extra_names]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[2]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(
            x509.SubjectAlternativeName(
                [
                    *(x509.DNSName(name) for name in names),
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                ]
            ),
            critical=False,
        )
        .add_extension(
            x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ServingCertificate(
        ca_pem=ca_cert.public_bytes(serialization.Encoding.PEM),
        cert_pem=cert.public_bytes(serialization.Encoding.PEM),
        key_pem=key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def load_certificate_dir(directory: Path | str) -> ServingCertificate:
    """Certificates mounted from a cert-manager Secret (``ca.crt``, ``tls.crt``, ``tls.key``)."""
    root = Path(directory)
    missing = [name for name in ("ca.crt", "tls.crt", "tls.key") if not (root / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"certDir {root}: missing {', '.join(missing)} (expected a cert-manager TLS Secret)"
        )
    return ServingCertificate(
        (root / "ca.crt").read_bytes(),
        (root / "tls.crt").read_bytes(),
        (root / "tls.key").read_bytes(),
    )


def _from_secret(secret: dict[str, Any]) -> ServingCertificate | None:
    data = secret.get("data") or {}
    if not all(key in data for key in ("ca.crt", "tls.crt", "tls.key")):
        return None
    return ServingCertificate(
        *(base64.b64decode(data[key]) for key in ("ca.crt", "tls.crt", "tls.key"))
    )


def _to_data(certificate: ServingCertificate) -> dict[str, str]:
    return {
        key: base64.b64encode(value).decode()
        for key, value in (
            ("ca.crt", certificate.ca_pem),
            ("tls.crt", certificate.cert_pem),
            ("tls.key", certificate.key_pem),
        )
    }


async def ensure_secret(
    client: KubeClient, namespace: str, secret: str, service: str, now: datetime | None = None
) -> ServingCertificate:
    """The certificate in the Secret; made anew when absent, expiring or for another Service.

    Replicas racing to create it converge: the loser of the create (409) reads the winner's.
    """
    now = now or datetime.now(timezone.utc)
    path = resource_path("v1", "Secret", namespace, secret)

    async def store() -> ServingCertificate:
        stored = await client.get(path)
        current = _from_secret(stored) if stored else None
        if (
            current is not None
            and current.not_after() - now > RENEW_BEFORE
            and set(service_names(service, namespace)) <= current.names()
        ):
            return current
        fresh = generate_certificate(service, namespace, now)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": secret, "namespace": namespace},
            "data": _to_data(fresh),
        }
        if stored is None:
            await client.create(resource_path("v1", "Secret", namespace), body)
        else:
            body["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
            await client.replace(path, body)
        logger.info(
            "generated webhook serving certificate", extra={"secret": f"{namespace}/{secret}"}
        )
        return fresh

    certificate = await retry_on_conflict(store, 3)  # another replica wrote it first: read theirs
    if certificate is None:
        raise RuntimeError(
            f"Secret {namespace}/{secret}: kept changing while the certificate was being stored"
        )
    return certificate


async def patch_ca_bundles(
    client: KubeClient, ca_pem: bytes, validating: str, mutating: str
) -> int:
    """Set ``caBundle`` on every webhook of both configurations; how many configurations changed."""
    bundle = base64.b64encode(ca_pem).decode()
    changed = 0
    for kind, name in (
        ("ValidatingWebhookConfiguration", validating),
        ("MutatingWebhookConfiguration", mutating),
    ):
        path = resource_path("admissionregistration.k8s.io/v1", kind, None, name)
        configuration = await client.get(path)
        if configuration is None:
            logger.warning(
                "webhook configuration not found; caBundle not set",
                extra={"kind": kind, "name": name},
            )
            continue
        webhooks = configuration.get("webhooks") or []
        if all((hook.get("clientConfig") or {}).get("caBundle") == bundle for hook in webhooks):
            continue
        for hook in webhooks:
            hook.setdefault("clientConfig", {})["caBundle"] = bundle
        await client.replace(path, configuration)
        changed += 1
    return changed
