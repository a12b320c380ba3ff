"""CURVE certificates: Z85 (RFC 32), X25519 key pairs, the certificate text."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import x25519
from trainer_runtime.curve import (
    Z85_ALPHABET,
    CurveKeyPair,
    curve_certificate,
    generate_curve_keypair,
    z85_encode,
)


def z85_decode(text: str) -> bytes:
    """Reference decoder (RFC 32), to check keys round-trip."""
    out = bytearray()
    for offset in range(0, len(text), 5):
        value = 0
        for char in text[offset : offset + 5]:
            value = value * 85 + Z85_ALPHABET.index(char)
        out += value.to_bytes(4, "big")
    return bytes(out)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        pytest.param(bytes.fromhex("864FD26FB559F75B"), "HelloWorld", id="rfc32-test-vector"),
        pytest.param(b"\x00\x00\x00\x00", "00000", id="zeros"),
        pytest.param(b"\xff\xff\xff\xff", "%nSc0", id="largest-group"),
        pytest.param(b"", "", id="empty"),
    ],
)
def test_z85_encode(data: bytes, text: str) -> None:
    assert z85_encode(data) == text
    assert z85_decode(text) == data


def test_z85_rejects_partial_groups() -> None:
    with pytest.raises(ValueError, match="whole 4-byte groups; got 3 bytes"):
        z85_encode(b"abc")


def test_generated_keys_are_a_fresh_x25519_pair_in_z85() -> None:
    first, second = generate_curve_keypair(), generate_curve_keypair()
    assert first != second
    for key in (first.public_key, first.secret_key):
        assert len(key) == 40
        assert set(key) <= set(Z85_ALPHABET)
    secret = x25519.X25519PrivateKey.from_private_bytes(z85_decode(first.secret_key))
    public = secret.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    assert z85_encode(public) == first.public_key


def test_certificate_has_the_zpl_sections_flux_reads() -> None:
    keys = CurveKeyPair(public_key="p" * 40, secret_key="s" * 40)
    lines = curve_certificate("job", keys).splitlines()
    assert lines[-5:] == [
        "metadata",
        '    name = "job"',
        "curve",
        f'    public-key = "{"p" * 40}"',
        f'    secret-key = "{"s" * 40}"',
    ]
    assert all(line.startswith("#") or not line for line in lines[:-5])
