"""CURVE certificates for Flux brokers: X25519 key pairs in ZeroMQ's Z85 text form.

Flux brokers authenticate each other over ZeroMQ CURVE with one shared certificate, the file
``flux keygen`` writes (ZPL text: a ``metadata`` and a ``curve`` section). ``z85_encode`` is
ZeroMQ RFC 32 (Z85), so no libzmq is needed to write it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import x25519

__all__ = ["CurveKeyPair", "curve_certificate", "generate_curve_keypair", "z85_encode"]

Z85_ALPHABET: Final = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)
_RAW: Final = serialization.Encoding.Raw


@dataclass(frozen=True)
class CurveKeyPair:
    """An X25519 key pair, each key as 40 Z85 characters (32 bytes)."""

    public_key: str
    secret_key: str


def z85_encode(data: bytes) -> str:
    """Z85 text of ``data``, whose length must be a multiple of 4 (RFC 32)."""
    if len(data) % 4:
        raise ValueError(f"Z85 encodes whole 4-byte groups; got {len(data)} bytes")
    chars: list[str] = []
    for offset in range(0, len(data), 4):
        value = int.from_bytes(data[offset : offset + 4], "big")
        group = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            group.append(Z85_ALPHABET[digit])
        chars.extend(reversed(group))
    return "".join(chars)


def generate_curve_keypair() -> CurveKeyPair:
    """A fresh random X25519 key pair (the default of ``Settings.curve_keypair``)."""
    secret = x25519.X25519PrivateKey.generate()
    return CurveKeyPair(
        public_key=z85_encode(
            secret.public_key().public_bytes(_RAW, serialization.PublicFormat.Raw)
        ),
        secret_key=z85_encode(
            secret.private_bytes(
                _RAW, serialization.PrivateFormat.Raw, serialization.NoEncryption()
            )
        ),
    )


def curve_certificate(name: str, keys: CurveKeyPair) -> str:
    """The secret certificate file the brokers share (the format ``flux keygen`` writes)."""
    return (
        "#   ZeroMQ CURVE secret certificate for the Flux brokers of one TrainJob.\n"
        "#   Written by trainer-controller; keep it readable by its owner only.\n"
        "\n"
        "metadata\n"
        f'    name = "{name}"\n'
        "curve\n"
        f'    public-key = "{keys.public_key}"\n'
        f'    secret-key = "{keys.secret_key}"\n'
    )
