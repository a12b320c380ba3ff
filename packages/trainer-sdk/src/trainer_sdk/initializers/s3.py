"""Download a prefix of an S3(-compatible) bucket: ListObjectsV2 and GET, signed with SigV4 when
credentials are given (anonymous otherwise)."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from pathlib import Path

from trainer_sdk.initializers.files import download_file, is_ignored

__all__ = ["download_s3", "sign_v4"]

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_NAMESPACE = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def sign_v4(
    url: str, access_key_id: str, secret_access_key: str, region: str, now: dt.datetime
) -> dict[str, str]:
    """Headers of an AWS Signature Version 4 GET request for ``url`` (service ``s3``)."""
    parts = urllib.parse.urlsplit(url)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    day = stamp[:8]
    query = "&".join(
        f"{urllib.parse.quote(key, safe='-_.~')}={urllib.parse.quote(value, safe='-_.~')}"
        for key, value in sorted(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    )
    headers = {"host": parts.netloc, "x-amz-content-sha256": _EMPTY_SHA256, "x-amz-date": stamp}
    signed = ";".join(sorted(headers))
    canonical = "\n".join(
        [
            "GET",
            urllib.parse.quote(parts.path or "/", safe="/-_.~"),
            query,
            *(f"{name}:{headers[name]}" for name in sorted(headers)),
            "",
            signed,
            _EMPTY_SHA256,
        ]
    )
    scope = f"{day}/{region}/s3/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = _hmac(
        _hmac(_hmac(_hmac(f"AWS4{secret_access_key}".encode(), day), region), "s3"), "aws4_request"
    )
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    return {
        "x-amz-content-sha256": _EMPTY_SHA256,
        "x-amz-date": stamp,
        "Authorization": f"AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, "
        f"SignedHeaders={signed}, Signature={signature}",
    }


def _request(url: str, credentials: tuple[str, str] | None, region: str) -> urllib.request.Request:
    headers = {}
    if credentials:
        headers = sign_v4(url, *credentials, region, dt.datetime.now(dt.timezone.utc))
    return urllib.request.Request(url, headers=headers)


def download_s3(
    storage_uri: str,
    target: Path,
    endpoint: str | None = None,
    access_key_id: str | None = None,
    secret_access_key: str | None = None,
    region: str | None = None,
    ignore_patterns: Sequence[str] = (),
) -> list[Path]:
    """Every object under ``s3://bucket/prefix`` into ``target``, keys relative to the prefix."""
    parsed = urllib.parse.urlsplit(storage_uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise ValueError(f"STORAGE_URI: expected s3://<bucket>/<prefix>, got {storage_uri!r}")
    bucket, prefix = parsed.netloc, parsed.path.lstrip("/")
    region = region or "us-east-1"
    base = (endpoint or f"https://s3.{region}.amazonaws.com").rstrip("/")
    credentials = (
        (access_key_id, secret_access_key) if access_key_id and secret_access_key else None
    )
    keys: list[str] = []
    token = ""
    while True:
        query = {
            "list-type": "2",
            "prefix": prefix,
            **({"continuation-token": token} if token else {}),
        }
        url = f"{base}/{bucket}?{urllib.parse.urlencode(query)}"
        with urllib.request.urlopen(_request(url, credentials, region), timeout=60) as response:
            listing = ElementTree.parse(response).getroot()
        keys += [
            item.findtext(f"{_NAMESPACE}Key") or ""
            for item in listing.iter(f"{_NAMESPACE}Contents")
        ]
        token = listing.findtext(f"{_NAMESPACE}NextContinuationToken") or ""
        if listing.findtext(f"{_NAMESPACE}IsTruncated") != "true" or not token:
            break
    written = []
    for key in keys:
        relative = key[len(prefix) :].lstrip("/") if prefix and key != prefix else Path(key).name
        if not relative or key.endswith("/") or is_ignored(relative, ignore_patterns):
            continue
        url = f"{base}/{bucket}/{urllib.parse.quote(key)}"
        written.append(download_file(_request(url, credentials, region), target, relative))
    if not written:
        raise FileNotFoundError(f"{storage_uri}: no objects to download (after ignore patterns)")
    return written
