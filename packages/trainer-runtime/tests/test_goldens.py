"""Golden outputs: what render gives for each built-in runtime and each upstream example TrainJob.

Each case is rendered as the CLI does (API defaults and validation, then the plugins) with a
fixed SSH key, and compared with ``goldens/<case>.yaml`` (a YAML stream) or, for inputs that
cannot be built, ``goldens/<case>.error.txt``. Every JobSet is also checked against the JobSet
CRD schema. Regenerate after a deliberate change with:

    UPDATE_GOLDENS=1 python -m pytest packages/trainer-controller/tests/test_goldens.py
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import trainer_api
import yaml
from runtime_cases import (
    FIXED_SETTINGS,
    by_kind,
    jobset_schema_errors,
    make_job,
    render_of,
    upstream_dir,
)
from trainer_runtime import BuildError, builtin_runtimes

GOLDENS = Path(__file__).parent / "goldens"
UPDATE = os.environ.get("UPDATE_GOLDENS") == "1"
NEEDS_UPSTREAM = pytest.mark.skipif(
    upstream_dir() is None, reason="upstream reference data not found (set TRAINER_UPSTREAM_DIR)"
)

# A typical TrainJob for each built-in runtime.
BUILTIN_JOBS: dict[str, dict[str, Any]] = {
    "torch-distributed": {
        "numNodes": 2,
        "command": ["torchrun", "train.py"],
        "resourcesPerNode": {"limits": {"cpu": "4"}},
    },
    "deepspeed-distributed": {"numNodes": 3, "command": ["mpirun", "python3", "train.py"]},
    "mlx-distributed": {"numNodes": 2, "command": ["mpirun", "python3", "train.py"]},
    "jax-distributed": {"numNodes": 2, "command": ["python3", "train.py"]},
    "xgboost-distributed": {"numNodes": 2, "command": ["python3", "train.py"]},
    "torch-distributed-with-cache": {"numNodes": 2, "command": ["torchrun", "train.py"]},
    "torchtune-llama3.2-1b": {"command": ["tune", "run"], "args": ["epochs=1"]},
    "torchtune-llama3.2-3b": {
        "command": ["tune", "run"],
        "args": ["model.lora_attn_modules=[q_proj,v_proj]"],
    },
    "torchtune-qwen2.5-1.5b": {
        "command": ["tune", "run"],
        "resourcesPerNode": {"limits": {"nvidia.com/gpu": "1"}},
    },
    "trl-cpu": {"numNodes": 2, "args": ["--learning_rate=0.0002", "--use_peft=true"]},
    "trl-gpu": {"args": ["--max_steps=100"]},
}


def _render(job: Any, runtime: Any) -> str:
    try:
        return trainer_api.dump_yaml_stream(render_of(job, runtime, settings=FIXED_SETTINGS))
    except BuildError as error:
        return f"error: {error}\n"


def _check(case: str, text: str) -> None:
    suffix = ".error.txt" if text.startswith("error: ") else ".yaml"
    path = GOLDENS / f"{case}{suffix}"
    if UPDATE:
        for stale in GOLDENS.glob(f"{case}.*"):
            stale.unlink()
        path.write_text(text)
    assert path.exists(), f"no golden {path.name}; run with UPDATE_GOLDENS=1 to create it"
    assert text == path.read_text(), (
        f"{path.name} differs; rerun with UPDATE_GOLDENS=1 if the change is deliberate"
    )
    if suffix == ".yaml" and upstream_dir() is not None:
        for jobset in by_kind([doc for doc in yaml.safe_load_all(text) if doc], "JobSet"):
            assert jobset_schema_errors(jobset) == []


@pytest.mark.parametrize("name", sorted(BUILTIN_JOBS))
def test_builtin_runtime_golden(name: str) -> None:
    job = trainer_api.parse(make_job(name="golden", runtime=name, **BUILTIN_JOBS[name]))
    if name == "torch-distributed-with-cache":
        job.spec.initializer = trainer_api.Initializer.model_validate(
            {
                "dataset": {
                    "storageUri": "cache://sales/orders",
                    "env": [
                        {"name": "METADATA_LOC", "value": "s3://bucket/orders/metadata.json"},
                        {"name": "CLUSTER_SIZE", "value": "3"},
                        {"name": "IAM_ROLE", "value": "arn:aws:iam::123456789012:role/cache"},
                    ],
                }
            }
        )
    _check(f"runtime-{name}", _render(job, builtin_runtimes()[name]))


RUNTIME_TYPES = (trainer_api.TrainingRuntime, trainer_api.ClusterTrainingRuntime)


def _typical_job(runtime: Any) -> Any:
    """A two-node TrainJob with a command for ``runtime`` (an example file without a job)."""
    doc = make_job(name="golden", runtime=runtime.metadata.name, numNodes=2)
    doc["spec"]["runtimeRef"]["kind"] = runtime.kind
    doc["spec"]["trainer"]["command"] = ["python3", "train.py", "--epochs", "2"]
    return trainer_api.parse(doc)


def _examples() -> list[Any]:
    root = upstream_dir()
    if root is None:
        return []
    folder = root / "kubeflow-trainer" / "examples"
    return [
        pytest.param(path, id=f"{path.parent.name}-{path.stem}")
        for path in sorted(folder.rglob("*.yaml"))
    ]


@NEEDS_UPSTREAM
@pytest.mark.parametrize("path", _examples())
def test_upstream_example_golden(path: Path) -> None:
    objects = trainer_api.parse_all(path.read_text())
    jobs = [obj for obj in objects if isinstance(obj, trainer_api.TrainJob)]
    if not jobs:  # a file of runtimes: each runs a typical job
        jobs = [_typical_job(obj) for obj in objects if isinstance(obj, RUNTIME_TYPES)]
    if not jobs:
        pytest.skip(f"{path.name} holds no TrainJob and no runtime")
    runtimes = {
        obj.metadata.name: obj
        for path_ in sorted(path.parent.glob("*.yaml"))
        for obj in trainer_api.parse_all(path_.read_text())
        if isinstance(obj, RUNTIME_TYPES)
    }
    texts = []
    for job in jobs:
        runtime = (
            runtimes.get(job.spec.runtime_ref.name) or builtin_runtimes()[job.spec.runtime_ref.name]
        )
        texts.append(_render(job, runtime))
    _check(f"example-{path.parent.name}-{path.stem}", "".join(texts))


def test_no_stale_goldens() -> None:
    expected = {f"runtime-{name}" for name in BUILTIN_JOBS}
    if upstream_dir() is None:
        pytest.skip("upstream reference data not found (set TRAINER_UPSTREAM_DIR)")
    expected |= {f"example-{p.values[0].parent.name}-{p.values[0].stem}" for p in _examples()}
    found = {
        path.name.removesuffix(".error.txt").removesuffix(".yaml") for path in GOLDENS.iterdir()
    }
    assert found <= expected


@NEEDS_UPSTREAM
def test_schema_check_catches_a_broken_jobset() -> None:
    text = (GOLDENS / "runtime-torch-distributed.yaml").read_text()
    (jobset,) = by_kind([doc for doc in yaml.safe_load_all(text) if doc], "JobSet")
    jobset["spec"]["replicatedJobs"][0]["replicas"] = "two"
    jobset["spec"]["suspend"] = "yes"
    errors = jobset_schema_errors(jobset)
    assert any(error.startswith("spec/replicatedJobs/0/replicas:") for error in errors)
    assert any(error.startswith("spec/suspend:") for error in errors)
