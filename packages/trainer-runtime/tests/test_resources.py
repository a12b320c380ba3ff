"""Resource arithmetic: per-pod requests, scaling, sums, GPU and CPU counts."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_runtime import resources
from trainer_runtime.errors import BuildError


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
    assert {
        name: str(amount) for name, amount in resources.pod_requests(pod_spec).items()
    } == expected


def test_scale_and_add_keep_units() -> None:
    per_pod = {"cpu": resources.quantity("2"), "memory": resources.quantity("4Gi")}
    extra = {"memory": resources.quantity("512Mi"), "cpu": resources.quantity("250m")}
    total = resources.add_requests([resources.scale_requests(per_pod, 100), extra])
    assert total == {"cpu": "200250m", "memory": "410112Mi"}


def test_bad_quantity_names_the_value() -> None:
    with pytest.raises(BuildError, match="'2 cores' is not a Kubernetes quantity"):
        resources.quantity("2 cores")


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
