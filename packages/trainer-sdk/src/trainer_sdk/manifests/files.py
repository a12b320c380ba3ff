"""TrainJob and runtime YAML files read as the API server reads them (``trainer_api.load_yaml``:
UTF-8, no excessive aliasing, no duplicate keys), each object parsed, every problem reported at
once. ``trainer run -f`` and ``trainer apply -f`` read their files here; bad input raises
``ValueError`` naming the file and the document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer_sdk import constants

__all__ = ["APPLIED_KINDS", "read_objects", "read_trainjob"]

APPLIED_KINDS = (
    constants.TRAINING_RUNTIME_KIND,
    constants.CLUSTER_TRAINING_RUNTIME_KIND,
    constants.TRAINJOB_KIND,
)


def _documents(path: Path) -> list[Any]:
    import trainer_api

    if not path.is_file():
        raise ValueError(f"no such file {str(path)!r}")
    try:
        return [doc for doc in trainer_api.load_yaml(path.read_bytes()) if doc is not None]
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror}") from None
    except trainer_api.ValidationError as error:
        raise ValueError(f"{path}: {error}") from None  # "invalid YAML: ..." or "not UTF-8 ..."


def _problems(index: int, doc: dict[str, Any], label: str) -> list[str]:
    """What is wrong with one TrainJob or runtime, each line prefixed with ``label``."""
    import trainer_api

    try:
        trainer_api.parse(doc)
    except trainer_api.ValidationError as error:
        return [f"{label}: {item}" for item in error.errors]
    name = doc["metadata"].get("name", "")
    if doc["kind"] != constants.TRAINJOB_KIND and not trainer_api.is_dns1123_subdomain(name):
        shown = f"{str(name)[:80]!r}{'...' if len(str(name)) > 80 else ''}"
        return [
            f"{label}: metadata.name: expected a lower-case DNS name of at most 253 "
            f"characters, got {shown}"
        ]
    return []


def read_objects(path: Path) -> list[dict[str, Any]]:
    """Every TrainingRuntime, ClusterTrainingRuntime and TrainJob in ``path`` (``trainer
    apply``); any other kind is a problem."""
    objects = _documents(path)
    problems = []
    for index, doc in enumerate(objects):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind not in APPLIED_KINDS:
            problems.append(
                f"document {index}: kind: expected one of {', '.join(APPLIED_KINDS)}, got {kind!r}"
            )
            continue
        problems += _problems(index, doc, f"{kind} {index}")
    if problems:
        raise ValueError(f"{path} is not valid:\n  " + "\n  ".join(problems))
    if not objects:
        raise ValueError(f"{path} holds no object")
    return objects


def read_trainjob(path: Path) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The one TrainJob in ``path`` (``trainer run -f``), and the runtime it references if the
    file holds that too; other kinds are ignored."""
    ours = [
        doc
        for doc in _documents(path)
        if isinstance(doc, dict) and doc.get("kind") in APPLIED_KINDS
    ]
    problems = [
        line for index, doc in enumerate(ours) for line in _problems(index, doc, doc["kind"])
    ]
    if problems:
        raise ValueError(f"{path} is not valid:\n  " + "\n  ".join(problems))
    jobs = [doc for doc in ours if doc["kind"] == constants.TRAINJOB_KIND]
    if len(jobs) != 1:
        raise ValueError(f"expected exactly one TrainJob in {path}, found {len(jobs)}")
    reference = jobs[0]["spec"]["runtimeRef"]
    runtimes = [
        doc
        for doc in ours
        if doc is not jobs[0] and (doc.get("metadata") or {}).get("name") == reference["name"]
    ]
    return jobs[0], runtimes[0] if runtimes else None
