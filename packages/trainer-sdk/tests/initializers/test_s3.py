"""S3 downloads against a local stand-in speaking ListObjectsV2, anonymous and SigV4-signed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from trainer_sdk.initializers import download_s3
from trainer_sdk.initializers.s3 import sign_v4

from .conftest import Fixture

LISTING = """<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>models/tiny</Prefix><IsTruncated>false</IsTruncated>
  <Contents><Key>models/tiny/config.json</Key></Contents>
  <Contents><Key>models/tiny/sub/weights.pt</Key></Contents>
  <Contents><Key>models/tiny/sub/tokenizer.txt</Key></Contents>
</ListBucketResult>"""


def serve_bucket(fixture: Fixture) -> None:
    fixture.routes["/bucket?list-type=2&prefix=models%2Ftiny"] = LISTING.encode()
    fixture.routes["/bucket/models/tiny/config.json"] = b"{}"
    fixture.routes["/bucket/models/tiny/sub/weights.pt"] = b"w"
    fixture.routes["/bucket/models/tiny/sub/tokenizer.txt"] = b"t"


def test_prefix_is_downloaded_relative_minus_ignored(http_fixture: Fixture, tmp_path: Path) -> None:
    serve_bucket(http_fixture)
    files = download_s3(
        "s3://bucket/models/tiny", tmp_path, http_fixture.url, ignore_patterns=["*.pt"]
    )
    assert sorted(path.relative_to(tmp_path).as_posix() for path in files) == [
        "config.json",
        "sub/tokenizer.txt",
    ]
    assert all("Authorization" not in headers for _, headers in http_fixture.seen)


def test_credentials_sign_every_request(http_fixture: Fixture, tmp_path: Path) -> None:
    serve_bucket(http_fixture)
    download_s3(
        "s3://bucket/models/tiny", tmp_path, http_fixture.url, "AKID", "SECRET", "eu-west-1"
    )
    authorizations = [headers.get("Authorization", "") for _, headers in http_fixture.seen]
    assert authorizations and all(
        value.startswith("AWS4-HMAC-SHA256 Credential=AKID/")
        and "/eu-west-1/s3/aws4_request" in value
        for value in authorizations
    )


def test_sigv4_matches_the_documented_example() -> None:
    """AWS's published GET Object example (examplebucket, test.txt, 2013-05-24) without Range."""
    headers = sign_v4(
        "https://examplebucket.s3.amazonaws.com/test.txt",
        "AKIAIOSFODNN7EXAMPLE",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "us-east-1",
        dt.datetime(2013, 5, 24, tzinfo=dt.timezone.utc),
    )
    assert headers["x-amz-date"] == "20130524T000000Z"
    assert headers["Authorization"].startswith(
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="
    )
