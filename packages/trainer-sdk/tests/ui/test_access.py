"""Who may use the UI: Host header, token, and the write header, as a table."""

from __future__ import annotations

import pytest
from trainer_sdk.ui import Access, is_loopback
from trainer_sdk.ui.access import COOKIE_NAME

TOKEN = "s3cret-token"


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        pytest.param("127.0.0.1", True, id="ipv4"),
        pytest.param("127.0.0.2", True, id="ipv4-net"),
        pytest.param("::1", True, id="ipv6"),
        pytest.param("localhost", True, id="name"),
        pytest.param("0.0.0.0", False, id="any"),
        pytest.param("10.0.0.5", False, id="lan"),
        pytest.param("example.com", False, id="dns"),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_non_loopback_bind_without_a_token_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"token: binding .0\.0\.0\.0. \(not loopback\) needs a token"
    ):
        Access("0.0.0.0", None)


@pytest.mark.parametrize(
    ("access", "method", "headers", "query_token", "refused"),
    [
        pytest.param(
            Access("127.0.0.1", None),
            "GET",
            {"host": "127.0.0.1:8265"},
            None,
            None,
            id="loopback-open",
        ),
        pytest.param(
            Access("127.0.0.1", None),
            "GET",
            {"host": "localhost:8265"},
            None,
            None,
            id="loopback-by-name",
        ),
        pytest.param(
            Access("127.0.0.1", None),
            "GET",
            {"host": "evil.example:8265"},
            None,
            403,
            id="dns-rebinding",
        ),
        pytest.param(Access("127.0.0.1", None), "GET", {}, None, 403, id="no-host"),
        pytest.param(
            Access("127.0.0.1", None),
            "POST",
            {"host": "127.0.0.1"},
            None,
            403,
            id="write-without-header",
        ),
        pytest.param(
            Access("127.0.0.1", None),
            "POST",
            {"host": "127.0.0.1", "x-trainer-ui": "1"},
            None,
            None,
            id="write",
        ),
        pytest.param(
            Access("0.0.0.0", TOKEN), "GET", {"host": "10.1.2.3:8265"}, None, 401, id="no-token"
        ),
        pytest.param(
            Access("0.0.0.0", TOKEN),
            "GET",
            {"host": "10.1.2.3:8265"},
            "wrong",
            401,
            id="wrong-token",
        ),
        pytest.param(
            Access("0.0.0.0", TOKEN),
            "GET",
            {"host": "10.1.2.3:8265"},
            TOKEN,
            None,
            id="query-token",
        ),
        pytest.param(
            Access("0.0.0.0", TOKEN),
            "GET",
            {"host": "10.1.2.3", "authorization": f"Bearer {TOKEN}"},
            None,
            None,
            id="bearer",
        ),
        pytest.param(
            Access("0.0.0.0", TOKEN),
            "GET",
            {"host": "10.1.2.3", "cookie": f"other=1; {COOKIE_NAME}={TOKEN}"},
            None,
            None,
            id="cookie",
        ),
        pytest.param(
            Access("10.1.2.3", TOKEN), "GET", {"host": "10.9.9.9"}, TOKEN, 403, id="other-address"
        ),
    ],
)
def test_refusal(
    access: Access,
    method: str,
    headers: dict[str, str],
    query_token: str | None,
    refused: int | None,
) -> None:
    refusal = access.refusal(method, headers, query_token)
    assert (refusal[0] if refusal else None) == refused
