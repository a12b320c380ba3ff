"""Builders and lookups shared by the trainer-controller tests (imported through conftest)."""

from __future__ import annotations

import functools
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml
from mpi_runtime import SSHKeyPair
from trainer_api import ApiObject, TrainJob
from trainer_runtime import (
    PLUGINS,
    Admission,
    CurveKeyPair,
    InvalidTrainJobError,
    Observed,
    Plan,
    Settings,
    admit,
    build,
    builtin_runtimes,
    framework,
    parse_runtime,
    parse_trainjob,
    render,
)
from trainer_runtime.info import RuntimeInfo, runtime_info
from trainer_runtime.inputs import Runtime

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone.utc)
FIXED_KEYPAIR = SSHKeyPair(
    private_key="-----BEGIN EC PRIVATE KEY-----\nfixed-test-key\n-----END EC PRIVATE KEY-----\n",
    public_key="ecdsa-sha2-nistp521 AAAAfixedtestkey\n",
)
# 40 Z85 characters each, like a real key (not a valid key pair: nothing here checks one).
FIXED_CURVE_KEYPAIR = CurveKeyPair(public_key="P" * 40, secret_key="S" * 40)
FIXED_SETTINGS = Settings(
    ssh_keypair=lambda: FIXED_KEYPAIR,
    curve_keypair=lambda: FIXED_CURVE_KEYPAIR,
    cache_token=lambda: "fixed-cache-token",
)


def upstream_dir() -> Path | None:
    """The upstream reference data (``TRAINER_UPSTREAM_DIR`` or ../shared/upstream), or None."""
    configured = os.environ.get("TRAINER_UPSTREAM_DIR")
    path = (
        Path(configured)
        if configured
        else Path(__file__).resolve().parents[3] / ".." / "shared" / "upstream"
    )
    return path if path.is_dir() else None


def make_job(
    name: str = "alpha", runtime: str = "torch-distributed", **trainer: Any
) -> dict[str, Any]:
    """A TrainJob manifest dict; ``trainer`` fields go to spec.trainer."""
    job: dict[str, Any] = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"runtimeRef": {"name": runtime}},
    }
    if trainer:
        job["spec"]["trainer"] = trainer
    return job


def runtime_doc(name: str) -> dict[str, Any]:
    """A built-in runtime as a manifest dict."""
    return builtin_runtimes()[name].to_dict()


def make_runtime(
    ml_policy: dict[str, Any], replicated_jobs: list[dict[str, Any]], **spec: Any
) -> dict[str, Any]:
    """A ClusterTrainingRuntime manifest named ``custom``."""
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "custom"},
        "spec": {
            "mlPolicy": ml_policy,
            "template": {"spec": {"replicatedJobs": replicated_jobs}},
            **spec,
        },
    }


def replicated_job(
    name: str, ancestor: str | None = None, container: str = "node", **pod_spec: Any
) -> dict[str, Any]:
    """A replicated job whose pod has one container called ``container``."""
    job: dict[str, Any] = {
        "name": name,
        "template": {
            "spec": {
                "template": {
                    "spec": {"containers": [{"name": container, "image": "busybox"}], **pod_spec}
                }
            }
        },
    }
    if ancestor:
        job["template"]["metadata"] = {
            "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": ancestor}
        }
    return job


def by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The objects of one kind, in order."""
    return [obj for obj in objects if obj["kind"] == kind]


def container_of(jobset: dict[str, Any], job: str, container: str = "node") -> dict[str, Any]:
    """A container of a replicated job in a rendered JobSet."""
    for replicated in jobset["spec"]["replicatedJobs"]:
        if replicated["name"] == job:
            for item in replicated["template"]["spec"]["template"]["spec"]["containers"]:
                if item["name"] == container:
                    return item
    raise KeyError(f"{job}/{container}")


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """Env name -> value (or valueFrom), in order."""
    return {
        var["name"]: var.get("value", var.get("valueFrom")) for var in container.get("env") or ()
    }


def load_yaml(path: Path) -> list[dict[str, Any]]:
    """The documents of a YAML file."""
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


@functools.cache
def jobset_validator() -> Any:
    """A jsonschema validator of the JobSet v1alpha2 CRD schema, or None without upstream data."""
    root = upstream_dir()
    if root is None:
        return None
    import jsonschema

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd = yaml.load((root / "jobset" / "jobset.x-k8s.io_jobsets.yaml").read_text(), Loader=loader)
    schema = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha2")["schema"][
        "openAPIV3Schema"
    ]
    return jsonschema.Draft7Validator(schema)


def jobset_schema_errors(jobset: dict[str, Any]) -> list[str]:
    """Every schema violation of ``jobset``, as 'path: message' lines."""
    validator = jobset_validator()
    return [
        "/".join(map(str, error.absolute_path)) + ": " + error.message
        for error in sorted(
            validator.iter_errors(jobset), key=lambda e: list(map(str, e.absolute_path))
        )
    ]


def as_job(job: dict[str, Any] | ApiObject) -> TrainJob:
    """A TrainJob manifest parsed at the test's edge, as a driver parses it (a model as given)."""
    return job if isinstance(job, TrainJob) else parse_trainjob(job)


def as_runtime(runtime: dict[str, Any] | ApiObject | None) -> Runtime | None:
    """A runtime manifest parsed at the test's edge (a model as given, None as None)."""
    if runtime is None or not isinstance(runtime, dict):
        return runtime  # type: ignore[return-value]
    return parse_runtime(runtime)


def info_of(job: dict[str, Any] | ApiObject, runtime: dict[str, Any] | ApiObject) -> RuntimeInfo:
    """``runtime_info`` of ``job`` and ``runtime`` (manifest dicts or models)."""
    typed_runtime = as_runtime(runtime)
    assert typed_runtime is not None
    return runtime_info(as_job(job), typed_runtime)


def admitted(
    job: dict[str, Any] | ApiObject,
    runtime: dict[str, Any] | ApiObject | None,
    *,
    old: dict[str, Any] | None = None,
    observed: Observed | None = None,
    plugins: Any = PLUGINS,
) -> Admission:
    """``job`` against ``runtime`` (manifest dicts or models), parsed and admitted."""
    return admit(
        as_job(job),
        as_runtime(runtime),
        old=as_job(old) if old is not None else None,
        observed=observed,
        plugins=plugins,
    )


def unchecked(job: dict[str, Any], runtime: dict[str, Any]) -> Admission:
    """An admission of ``job`` that skipped the rules (a job stored while the webhook was off):
    what ``build`` does with what admission would have refused."""
    typed_runtime = as_runtime(runtime)
    return Admission(as_job(job), typed_runtime, info=info_of(job, runtime))


def render_of(
    job: dict[str, Any] | ApiObject,
    runtime: dict[str, Any] | ApiObject,
    observed: Observed | None = None,
    settings: Settings | None = None,
    plugins: Any = PLUGINS,
    *,
    snapshot: bool = True,
) -> list[dict[str, Any]]:
    """``render`` of ``job`` admitted against ``runtime``."""
    admission = admitted(job, runtime, observed=observed, plugins=plugins)
    return render(admission, observed, settings, plugins, snapshot=snapshot)


def build_of(
    job: dict[str, Any] | ApiObject,
    runtime: dict[str, Any] | ApiObject | None,
    observed: Observed,
    now: datetime,
    *,
    settings: Settings | None = None,
    plugins: Any = PLUGINS,
) -> Plan:
    """``build`` of ``job`` (with its status) admitted against ``runtime``."""
    admission = admitted(job, runtime, observed=observed, plugins=plugins)
    return build(admission, observed, now, settings=settings, plugins=plugins)


def rendered_jobset(job: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any]:
    """The JobSet ``render`` builds for ``job`` (fixed SSH key)."""
    return by_kind(render_of(job, runtime, settings=FIXED_SETTINGS), "JobSet")[0]


def field_errors(job: dict[str, Any], runtime: dict[str, Any]) -> list[str]:
    """The plugins' validation messages (or the manifests' parse errors), as 'field: message'
    strings."""
    try:
        typed_job = as_job(job)
        info = info_of(typed_job, runtime)
    except InvalidTrainJobError as error:
        return [str(item) for item in error.errors]
    return [str(error) for error in framework.field_errors(info, typed_job, PLUGINS)]


# The env source of a rank taken from the Job completion index.
COMPLETION_INDEX = {
    "fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
}
