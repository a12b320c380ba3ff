"""Conformance with the upstream reference data (skipped when it is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_api.conformance import ManifestResult, check_manifests, compare_schemas, main


@pytest.fixture(scope="module")
def manifest_results(upstream_dir: Path) -> list[ManifestResult]:
    return check_manifests(upstream_dir)


def test_every_upstream_manifest_parses_strictly_and_round_trips(
    manifest_results: list[ManifestResult],
) -> None:
    assert len(manifest_results) >= 20
    assert [r.file for r in manifest_results if r.parse_errors or not r.round_trips] == []
    kinds = {result.kind for result in manifest_results}
    assert kinds == {"TrainJob", "TrainingRuntime", "ClusterTrainingRuntime"}


def test_every_upstream_manifest_validates_except_the_multi_step_example(
    manifest_results: list[ManifestResult],
) -> None:
    rejected = [(r.file, r.kind, [e.field for e in r.errors]) for r in manifest_results if r.errors]
    assert rejected == [
        (
            "kubeflow-trainer/examples/yaml/05-multi-step.yaml",
            "TrainJob",
            ["spec.runtimeRef", "spec.initializer.dataset"],
        )
    ]
    upstream, ours = next(r for r in manifest_results if r.errors).errors
    assert upstream.message.startswith("must have volumeMount with name - initializer")
    assert "'initializer' volume" in ours.message
    assert all(result.conforms for result in manifest_results)


def test_every_upstream_crd_field_path_exists_in_ours_with_the_same_type(
    upstream_dir: Path,
) -> None:
    reports = compare_schemas(upstream_dir)
    assert [Path(report.crd).name for report in reports] == [
        "trainer.kubeflow.org_trainjobs.yaml",
        "trainer.kubeflow.org_trainingruntimes.yaml",
        "trainer.kubeflow.org_clustertrainingruntimes.yaml",
        "jobset.x-k8s.io_jobsets.yaml",
        "trainer.kubeflow.org_optimizationjobs.yaml",
    ]
    for report in reports:
        assert (report.crd, report.missing, report.mismatched, report.preserved) == (
            report.crd,
            [],
            [],
            [],
        )
        assert len(report.matched) == report.total > 700


def test_report_prints_tables_and_exits_zero(
    upstream_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(upstream_dir)]) == 0
    out = capsys.readouterr().out
    assert "20/20 upstream documents conform" in out
    assert "| matched | preserved | missing | type differs" in out


def test_report_without_data_says_where_it_looked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path)]) == 2
    assert "TRAINER_UPSTREAM_DIR" in capsys.readouterr().out
