"""Upserts on container and pod-spec dicts: replace in place, else append."""

from __future__ import annotations

from trainer_runtime import podspecs


def test_upsert_env_replaces_in_place_and_appends() -> None:
    container = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}
    podspecs.upsert_env(
        container, [podspecs.value_env("A", "9"), podspecs.field_ref_env("C", "metadata.name")]
    )
    assert container["env"] == [
        {"name": "A", "value": "9"},
        {"name": "B", "value": "2"},
        {"name": "C", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]
    assert podspecs.env_value(container, "C") == {"fieldRef": {"fieldPath": "metadata.name"}}
    assert podspecs.env_value(container, "missing") is None


def test_upserts_are_idempotent() -> None:
    container: dict = {}
    pod_spec: dict = {}
    for _ in range(2):
        podspecs.upsert_port(container, 29500)
        podspecs.upsert_volume_mount(container, {"name": "v", "mountPath": "/v"})
        podspecs.upsert_volume(pod_spec, {"name": "v", "emptyDir": {}})
    assert container == {
        "ports": [{"containerPort": 29500}],
        "volumeMounts": [{"name": "v", "mountPath": "/v"}],
    }
    assert pod_spec == {"volumes": [{"name": "v", "emptyDir": {}}]}
