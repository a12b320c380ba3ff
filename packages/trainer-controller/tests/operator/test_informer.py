"""The informer cache: newest copy wins, deletions drop, stale entries are re-read, copies."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_controller.operator.informer import ObjectCache

PATH = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/job"


def jobset(version: str | None, replicas: int = 1) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "job", "namespace": "default"}
    if version is not None:
        metadata["resourceVersion"] = version
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": metadata,
        "spec": {"replicas": replicas},
    }


@pytest.mark.parametrize(
    ("first", "second", "kept"),
    [
        pytest.param("5", "7", 2, id="newer-replaces"),
        pytest.param("7", "5", 1, id="older-event-after-a-write-is-ignored"),
        pytest.param("7", "7", 2, id="same-version-replaces"),
        pytest.param(None, "5", 2, id="unversioned-replaced"),
        pytest.param("5", "abc", 2, id="opaque-version-replaces"),
    ],
)
def test_newest_copy_wins(first: str | None, second: str | None, kept: int) -> None:
    cache = ObjectCache()
    cache.remember(jobset(first, replicas=1))
    cache.observe("MODIFIED", jobset(second, replicas=2))
    assert cache.get(PATH)["spec"]["replicas"] == kept  # type: ignore[index]


def test_listed_added_and_deleted_events(clock) -> None:  # type: ignore[no-untyped-def]
    cache = ObjectCache(clock=clock)
    cache.observe(None, jobset("3"))  # listed when the watch started
    assert cache.get(PATH) is not None and len(cache) == 1
    cache.observe("DELETED", jobset("4"))
    assert cache.get(PATH) is None and len(cache) == 0


def test_entries_unrefreshed_for_max_age_are_read_again(clock) -> None:  # type: ignore[no-untyped-def]
    cache = ObjectCache(max_age=300, clock=clock)
    cache.remember(jobset("3"))
    clock.now += 300
    assert cache.get(PATH) is not None
    clock.now += 1
    assert cache.get(PATH) is None
    cache.remember(jobset("3"))  # the re-read refreshes it
    assert cache.get(PATH) is not None


def test_callers_get_their_own_copies() -> None:
    cache = ObjectCache()
    original = jobset("1")
    cache.remember(original)
    original["spec"]["replicas"] = 9
    first = cache.get(PATH)
    first["spec"]["replicas"] = 8  # type: ignore[index]
    assert cache.get(PATH)["spec"]["replicas"] == 1  # type: ignore[index]


def test_cluster_scoped_and_core_paths() -> None:
    cache = ObjectCache()
    cache.remember(
        {
            "apiVersion": "trainer.kubeflow.org/v1alpha1",
            "kind": "ClusterTrainingRuntime",
            "metadata": {"name": "torch-distributed"},
        }
    )
    cache.remember(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "ns"}}
    )
    assert cache.get(
        "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes/torch-distributed"
    )
    assert cache.get("/api/v1/namespaces/ns/secrets/s")
    cache.forget("/api/v1/namespaces/ns/secrets/s")
    assert cache.get("/api/v1/namespaces/ns/secrets/s") is None
