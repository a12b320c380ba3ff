"""A fresh stand-in per test, with the JobSet CRD-like test resource registered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kube_standin import ApiServer

WIDGETS_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {
            "plural": "widgets",
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wd"],
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def server() -> Iterator[ApiServer]:
    with ApiServer() as running:
        status, _ = running.request(
            "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", WIDGETS_CRD
        )
        assert status == 201
        yield running
