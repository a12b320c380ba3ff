"""Label and field selectors."""

from __future__ import annotations

import pytest
from kube_standin import selectors

OBJ = {"metadata": {"name": "n", "namespace": "ns", "labels": {"app": "x", "tier": "web"}}}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("", True, id="empty-matches-all"),
        pytest.param("app=x", True, id="equals"),
        pytest.param("app==x", True, id="double-equals"),
        pytest.param("app!=x", False, id="not-equals"),
        pytest.param("tier in (web, db)", True, id="in"),
        pytest.param("tier notin (web)", False, id="notin"),
        pytest.param("app", True, id="exists"),
        pytest.param("!app", False, id="not-exists"),
        pytest.param("app=x,tier in (db)", False, id="all-terms-must-hold"),
        pytest.param("missing!=y", True, id="not-equals-on-missing-label"),
    ],
)
def test_label_selector(selector: str, expected: bool) -> None:
    assert selectors.parse_label_selector(selector)(OBJ) is expected


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("metadata.name=n", True, id="name"),
        pytest.param("metadata.namespace!=ns", False, id="namespace-not"),
        pytest.param("metadata.name=n,metadata.namespace=other", False, id="both"),
    ],
)
def test_field_selector(selector: str, expected: bool) -> None:
    assert selectors.parse_field_selector(selector)(OBJ) is expected


def test_unparsable_selector_names_the_term() -> None:
    with pytest.raises(selectors.InvalidSelectorError, match="labelSelector: cannot parse term"):
        selectors.parse_label_selector("a in b")
