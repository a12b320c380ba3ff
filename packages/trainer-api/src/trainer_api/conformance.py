"""Conformance with upstream Kubeflow Trainer: ``python -m trainer_api.conformance [UPSTREAM]``.

Reads the upstream reference data in place (``TRAINER_UPSTREAM_DIR``, else
``<repo>/../shared/upstream``) and reports (a) how the upstream TrainJob and runtime
manifests parse, round-trip and validate, and (b) how the field paths of the upstream CRD
schemas map onto ours.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from trainer_api._base import KubernetesObject
from trainer_api._defaults import apply_defaults
from trainer_api._errors import FieldError, ValidationError
from trainer_api._jobset import JobSet
from trainer_api._openapi import model_schema
from trainer_api._optimization import OptimizationJob
from trainer_api._parsing import parse
from trainer_api._runtime import ClusterTrainingRuntime, TrainingRuntime
from trainer_api._trainjob import TrainJob
from trainer_api._validation import validate
from trainer_api._yaml import load_documents

__all__ = [
    "EXPECTED_REJECTIONS",
    "ManifestResult",
    "SchemaReport",
    "check_manifests",
    "compare_schemas",
    "default_upstream_dir",
    "main",
]

MANIFEST_KINDS: Final = ("TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
EXPECTED_REJECTIONS: Final[dict[tuple[str, str], tuple[str, ...]]] = {
    ("kubeflow-trainer/examples/yaml/05-multi-step.yaml", "TrainJob"): (
        "spec.runtimeRef",
        "spec.initializer.dataset",
    ),
}
"""Upstream manifests that are invalid at the pinned commit, and the fields reported."""

_SCHEMAS: Final[tuple[tuple[str, type[KubernetesObject]], ...]] = (
    ("kubeflow-trainer/manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml", TrainJob),
    (
        "kubeflow-trainer/manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml",
        TrainingRuntime,
    ),
    (
        "kubeflow-trainer/manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
        ClusterTrainingRuntime,
    ),
    ("jobset/jobset.x-k8s.io_jobsets.yaml", JobSet),
    (
        "kubeflow-trainer/manifests/base/crds/trainer.kubeflow.org_optimizationjobs.yaml",
        OptimizationJob,
    ),
)
"""Each upstream CRD and the model whose schema must cover it."""


def default_upstream_dir() -> Path:
    """``TRAINER_UPSTREAM_DIR``, else ``../shared/upstream`` next to the repository root."""
    configured = os.environ.get("TRAINER_UPSTREAM_DIR")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[4] / ".." / "shared" / "upstream"


@dataclass(frozen=True)
class ManifestResult:
    """What happened to one upstream document."""

    file: str
    kind: str
    name: str
    parse_errors: tuple[FieldError, ...] = ()
    round_trips: bool = False
    errors: tuple[FieldError, ...] = ()

    @property
    def conforms(self) -> bool:
        """Parsed, round-tripped, and valid or rejected exactly as expected."""
        expected = EXPECTED_REJECTIONS.get((self.file, self.kind), ())
        valid = tuple(error.field for error in self.errors) == expected
        return not self.parse_errors and self.round_trips and valid


def check_manifests(upstream: Path) -> list[ManifestResult]:
    """Parse (strict), round-trip, default and validate every upstream manifest.

    A TrainJob is validated against its runtime, looked up among the upstream runtimes.
    """
    documents = list(_manifest_documents(upstream))
    parsed: dict[int, KubernetesObject] = {}
    results: dict[int, ManifestResult] = {}
    for index, (file, document) in enumerate(documents):
        name = str((document.get("metadata") or {}).get("name"))
        try:
            obj = parse(document)
        except ValidationError as error:
            results[index] = ManifestResult(file, document["kind"], name, tuple(error.errors))
            continue
        parsed[index] = apply_defaults(obj)
        results[index] = ManifestResult(file, obj.kind, name, round_trips=obj.to_dict() == document)
    runtimes: dict[tuple[str | None, str | None], TrainingRuntime | ClusterTrainingRuntime] = {
        (runtime.kind, runtime.metadata.name): runtime
        for runtime in parsed.values()
        if isinstance(runtime, (TrainingRuntime, ClusterTrainingRuntime))
    }
    for index, defaulted in parsed.items():
        runtime = None
        if isinstance(defaulted, TrainJob):
            ref = defaulted.spec.runtime_ref
            runtime = runtimes.get((ref.kind, ref.name))
        result = results[index]
        results[index] = ManifestResult(
            result.file,
            result.kind,
            result.name,
            round_trips=result.round_trips,
            errors=tuple(validate(defaulted, runtime=runtime)),
        )
    return [results[index] for index in range(len(documents))]


def _manifest_documents(upstream: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    root = upstream / "kubeflow-trainer"
    for folder in ("manifests/base/runtimes", "examples"):
        for path in sorted((root / folder).rglob("*.yaml")):
            for document in load_documents(path.read_text()):
                if isinstance(document, dict) and document.get("kind") in MANIFEST_KINDS:
                    yield path.relative_to(upstream).as_posix(), document


@dataclass
class SchemaReport:
    """How the field paths of one upstream CRD schema map onto ours."""

    crd: str
    matched: list[str] = field(default_factory=list)
    """Same path, same type."""
    preserved: list[str] = field(default_factory=list)
    """Inside an object we keep as free-form JSON (unknown fields preserved)."""
    missing: list[str] = field(default_factory=list)
    mismatched: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        """Number of upstream field paths."""
        return len(self.matched) + len(self.preserved) + len(self.missing) + len(self.mismatched)


def compare_schemas(upstream: Path) -> list[SchemaReport]:
    """Every field path of the upstream CRD schemas, looked up in ours."""
    reports = []
    for relative, model in _SCHEMAS:
        crd = yaml.load((upstream / relative).read_text(), Loader=_LOADER)
        theirs = dict(_paths(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]))
        ours = dict(_paths(model_schema(model, root=True)))
        free_form = {path for path, kind in ours.items() if kind == _FREE_FORM}
        report = SchemaReport(relative)
        for path, kind in theirs.items():
            if path in ours:
                same = ours[path] == kind or (ours[path] == _FREE_FORM and kind == "object")
                (report.matched if same else report.mismatched).append(path)
            elif any(ancestor in free_form for ancestor in _ancestors(path)):
                report.preserved.append(path)
            else:
                report.missing.append(path)
        reports.append(report)
    return reports


_FREE_FORM: Final = "object (free-form)"
_LOADER: Final = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _paths(schema: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(path, type)`` of a schema and everything below it; ``[]`` for items, ``{}`` for values."""
    if schema.get("x-kubernetes-int-or-string"):
        kind = "int-or-string"
    elif schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        kind = _FREE_FORM
    elif schema.get("type") == "array":
        list_type = schema.get("x-kubernetes-list-type", "atomic")
        keys = ",".join(schema.get("x-kubernetes-list-map-keys", []))
        kind = f"array ({list_type}{': ' + keys if keys else ''})"
    else:
        kind = str(schema.get("type"))
    yield prefix, kind
    for name, child in (schema.get("properties") or {}).items():
        yield from _paths(child, f"{prefix}.{name}")
    if isinstance(schema.get("items"), Mapping):
        yield from _paths(schema["items"], f"{prefix}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from _paths(schema["additionalProperties"], f"{prefix}{{}}")


def _ancestors(path: str) -> Iterator[str]:
    """``.a.b[]`` -> ``.a.b``, ``.a``, ``""``."""
    for index in range(len(path) - 1, -1, -1):
        if path[index] in ".[{":
            yield path[:index]


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
    lines = [
        " | ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (headers, *rows)
    ]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the conformance tables; exit 1 if anything does not conform, 2 without data."""
    parser = argparse.ArgumentParser(prog="python -m trainer_api.conformance", description=__doc__)
    parser.add_argument("upstream", nargs="?", type=Path, default=None)
    arguments = parser.parse_args(argv)
    upstream = arguments.upstream or default_upstream_dir()
    if not (upstream / "kubeflow-trainer").is_dir():
        print(f"upstream reference data not found at {upstream} (set TRAINER_UPSTREAM_DIR)")
        return 2
    manifests = check_manifests(upstream)
    print(
        _table(
            ("file", "kind", "name", "parsed", "round-trip", "validation"),
            [
                (
                    result.file.removeprefix("kubeflow-trainer/"),
                    result.kind,
                    result.name,
                    "no" if result.parse_errors else "yes",
                    "yes" if result.round_trips else "no",
                    ("valid" if not result.errors else "rejected: " + result.errors[0].field)
                    + ("" if result.conforms else "  (UNEXPECTED)"),
                )
                for result in manifests
            ],
        )
    )
    conforming = sum(result.conforms for result in manifests)
    print(f"\n{conforming}/{len(manifests)} upstream documents conform\n")
    schemas = compare_schemas(upstream)
    print(
        _table(
            ("upstream CRD", "paths", "matched", "preserved", "missing", "type differs"),
            [
                (
                    Path(report.crd).name,
                    report.total,
                    len(report.matched),
                    len(report.preserved),
                    len(report.missing),
                    len(report.mismatched),
                )
                for report in schemas
            ],
        )
    )
    for report in schemas:
        for path in report.missing + report.mismatched:
            print(f"  {Path(report.crd).name}: {path or '<root>'}")
    ok = conforming == len(manifests) and not any(r.missing or r.mismatched for r in schemas)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
