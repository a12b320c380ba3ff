"""load_yaml: the API server's YAML limits (aliasing, depth, duplicate keys); dump_yaml."""

from __future__ import annotations

import time

import pytest
import trainer_api
import yaml
from trainer_api import ValidationError, load_yaml, parse, parse_all
from trainer_api._yaml import MAX_DEPTH, LimitError, check_value

HEADER = """apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: bomb}
"""


def bomb(width: int) -> str:
    """Four levels of ``width`` aliases each: runtime patches, jobs, containers, env."""

    def refs(name: str) -> str:
        return "[" + ", ".join([f"*{name}"] * width) + "]"

    return (
        HEADER.replace("{name: bomb}", "\n  name: bomb")
        + f"""  labels:
    x: &env {{name: A, value: x}}
    y: &envs {refs("env")}
    z: &container {{name: node, env: *envs}}
    w: &containers {refs("container")}
    v: &job {{name: node, template: {{spec: {{template: {{spec: {{containers: *containers}}}}}}}}}}
    u: &jobs {refs("job")}
    t: &patch {{manager: a.io/b, trainingRuntimeSpec: {{template: {{spec: {{replicatedJobs: *jobs
      }}}}}}}}
spec:
  runtimeRef: {{name: torch-distributed}}
  runtimePatches: {refs("patch")}
"""
    )


def refused(text: str | bytes) -> str:
    with pytest.raises(ValidationError) as caught:
        parse(text)
    return str(caught.value)


def test_alias_bomb_is_refused_before_anything_is_built() -> None:
    text = bomb(12)  # 0.8 KB; 135,092 nodes once expanded, all but 53 from aliases
    assert len(text) < 1024
    started = time.monotonic()
    message = refused(text)
    assert time.monotonic() - started < 1.0, "the refusal must not expand the aliases"
    assert "excessive aliasing" in message
    for load in (load_yaml, parse_all):
        with pytest.raises(ValidationError, match="excessive aliasing"):
            load(text)


def test_moderate_aliasing_is_kept_as_the_api_server_keeps_it() -> None:
    text = (
        HEADER
        + "spec:\n  runtimeRef: {name: r}\n  trainer:\n    args: &a [x, y]\n"
        + ("    command: *a\n")
    )
    job = parse(text)
    assert isinstance(job, trainer_api.TrainJob) and job.spec.trainer is not None
    assert job.spec.trainer.command == ["x", "y"]


def test_merge_keys_still_work_and_may_be_overridden() -> None:
    (document,) = load_yaml("base: &b {a: 1, b: 2}\nmerged: {<<: *b, b: 3}\n")
    assert document["merged"] == {"a": 1, "b": 3}


def test_an_anchor_containing_itself_is_refused() -> None:
    with pytest.raises(ValidationError, match="alias to itself"):
        load_yaml("a: &x [1, *x]\n")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(HEADER + "metadata: {name: again}\n", id="top-level"),
        pytest.param("a: {b: 1, c: 2, b: 3}\n", id="nested"),
        pytest.param("a: 1\n'a': 2\n", id="quoted"),
    ],
)
def test_duplicate_keys_are_refused_with_their_line(text: str) -> None:
    with pytest.raises(ValidationError, match="duplicate key") as caught:
        load_yaml(text)
    assert "line" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a: " + "[" * 1000 + "]" * 1000 + "\n", id="flow-lists"),
        pytest.param("".join(" " * i + f"k{i}:\n" for i in range(1000)), id="block-mappings"),
    ],
)
def test_deep_nesting_is_one_clear_error(text: str) -> None:
    with pytest.raises(ValidationError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        load_yaml(text)


def test_deep_nesting_in_a_dict_is_one_clear_error() -> None:
    deep: dict[str, object] = {}
    inner = deep
    for _ in range(5000):
        inner["x"] = {}
        inner = inner["x"]  # type: ignore[assignment]
    doc = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "spec": deep}
    with pytest.raises(ValidationError, match=f"nested deeper than {MAX_DEPTH} levels"):
        parse(doc)


def test_shared_and_cyclic_values_are_measured_without_expanding_them() -> None:
    shared: list[object] = [[1]]
    for _ in range(60):
        shared = [shared, shared]  # 2**60 paths through 61 distinct lists
    with pytest.raises(LimitError, match="excessive aliasing"):
        check_value(shared)
    doc = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "spec": shared}
    with pytest.raises(ValidationError, match="excessive aliasing"):
        parse(doc)
    cyclic: dict[str, object] = {}
    cyclic["self"] = cyclic
    with pytest.raises(LimitError, match=f"nested deeper than {MAX_DEPTH} levels"):
        check_value(cyclic)
    env = [{"name": "A", "value": "x"}]
    check_value({"containers": [{"env": env}, {"env": env}]})  # ordinary sharing is fine
    check_value("scalar")


def test_non_utf8_bytes_are_one_clear_error() -> None:
    message = refused(HEADER.encode() + b"spec: {runtimeRef: {name: \xff\xfe}}\n")
    assert "not UTF-8 text: byte 0xff at offset" in message


def test_utf8_bytes_parse_like_text() -> None:
    text = HEADER + "spec: {runtimeRef: {name: torch}}\n"
    assert parse(text.encode()).to_dict() == parse(text).to_dict()


def test_stream_round_trips_and_uses_literal_blocks() -> None:
    manifests = [
        {"kind": "ConfigMap", "data": {"hostfile": "a slots=1\nb slots=1\n"}},
        {"kind": "JobSet", "spec": {}},
    ]
    text = trainer_api.dump_yaml_stream(manifests)
    assert "hostfile: |\n    a slots=1\n    b slots=1\n" in text
    assert text.count("---\n") == 2
    assert list(yaml.safe_load_all(text)) == manifests


def test_dump_writes_shared_values_in_full_and_sorts_keys_when_asked() -> None:
    shared = {"b": 1, "a": 2}
    text = trainer_api.dump_yaml({"z": shared, "y": shared}, sort_keys=True)
    assert text == "y:\n  a: 2\n  b: 1\nz:\n  a: 2\n  b: 1\n"
