"""Resource arithmetic: per-pod requests, scaling, sums, GPU and CPU counts."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_controller.runtime import resources
from trainer_controller.runtime.errors import BuildError


@pytest.mark.parametrize(
    ("pod_spec", "expected"),
    [
        pytest.param(
            {"containers": [{"resources": {"requests": {"cpu": "500m"}}}]},
            {"cpu": "500m"},
            id="one-container",
        ),
        pytest.param(
            {
                "containers": [
                    {"resources": {"requests": {"cpu": "500m"}}},
                    {"resources": {"requests": {"cpu": "1"}}},
                ]
            },
            {"cpu": "1500m"},
            id="containers-summed",
        ),
        pytest.param(
            {"containers": [{"resources": {"limits": {"memory": "1Gi"}}}]},
            {"memory": "1Gi"},
            id="limit-stands-in",
        ),
        pytest.param(
            {
                "containers": [{"resources": {"requests": {"cpu": "1"}}}],
                "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
            },
            {"cpu": "2"},
            id="larger-init-container",
        ),
        pytest.param({"containers": [{}]}, {}, id="nothing-requested"),
    ],
)
def test_pod_requests(pod_spec: dict[str, Any], expected: dict[str, str]) -> None:
    assert resources.pod_requests(pod_spec) == expected


def test_scale_and_add_keep_units() -> None:
    total = resources.add_requests(
        [
            resources.scale_requests({"cpu": "2", "memory": "4Gi"}, 100),
            {"memory": "512Mi", "cpu": "250m"},
        ]
    )
    assert total == {"cpu": "200250m", "memory": "410112Mi"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", 1), ("500m", 0.5), ("1Ki", 1024), ("2G", 2e9), ("1e3", 1000)],
)
def test_quantity_value(value: str, expected: float) -> None:
    assert float(resources.quantity_value(value)) == expected


def test_bad_quantity_names_the_value() -> None:
    with pytest.raises(BuildError, match="'2 cores' is not a Kubernetes quantity"):
        resources.quantity_value("2 cores")


@pytest.mark.parametrize(
    ("node", "gpus", "cpus"),
    [
        pytest.param(None, 0, None, id="nothing"),
        pytest.param(
            {"limits": {"nvidia.com/gpu": "2"}, "requests": {"cpu": "1500m"}},
            2,
            2,
            id="gpu-and-cpu",
        ),
        pytest.param({"requests": {"nvidia.com/gpu": 1}}, 1, None, id="gpu-request"),
    ],
)
def test_gpu_and_cpu_counts(node: Any, gpus: int, cpus: int | None) -> None:
    assert resources.gpu_count(node) == gpus
    assert resources.cpu_count(node) == cpus
