"""``trainer-controller run`` as a process: it reconciles, and exits cleanly on SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from trainer_controller.cli import cli

CONFIG = """\
leaseNamespace: kubeflow-system
leaseDurationSeconds: 2
renewPeriodSeconds: 0.5
healthPort: 0
metricsPort: 0
progressPort: 0
bindAddress: 127.0.0.1
"""


@pytest.mark.e2e
def test_run_reconciles_until_sigterm(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    command = [
        sys.executable,
        "-c",
        "from trainer_controller.cli import main; main()",
        "run",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--no-webhooks",
        "--config",
        str(config),
        "--namespace",
        "default",
        "--log-format",
        "json",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        cluster.create(
            cluster.trainjobs,
            {
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "metadata": {"name": "job"},
                "spec": {"runtimeRef": {"name": "torch-distributed"}},
            },
        )
        cluster.wait_for(
            lambda: cluster.get(f"{cluster.jobsets}/job") or process.poll() is not None,
            timeout=60,
            what="the JobSet made by the process",
        )
        assert process.poll() is None, process.communicate()[1]
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=30)
    assert process.returncode == 0, errors
    assert '"msg": "became leader"' in errors


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("concurency: 2\n")
    result = CliRunner().invoke(cli, ["run", "--config", str(config)])
    assert result.exit_code == 2
    assert "concurency: unknown setting" in result.output


def test_cert_dir_without_certificates_names_the_missing_files(cluster, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(
        cli,
        [
            "run",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--cert-dir",
            str(tmp_path),
            "--health-port",
            "0",
            "--metrics-port",
            "0",
            "--webhook-port",
            "0",
            "--progress-port",
            "0",
        ],
    )
    assert result.exit_code == 1
    assert "missing ca.crt, tls.crt, tls.key" in str(result.exception)


@pytest.mark.parametrize(
    ("kubeconfig", "message"),
    [
        pytest.param(None, "cannot start: no cluster to connect to", id="no-kubeconfig"),
        pytest.param(
            "http://127.0.0.1:1",
            "cannot reach the API server http://127.0.0.1:1: Cannot connect to host",
            id="unreachable",
        ),
    ],
)
def test_run_without_a_cluster_is_one_json_error_line(
    tmp_path: Path, kubeconfig: str | None, message: str
) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "KUBECONFIG": str(tmp_path / "absent")}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    if kubeconfig is not None:
        env["KUBECONFIG"] = str(tmp_path / "kc")
        (tmp_path / "kc").write_text(
            yaml.safe_dump(
                {
                    "current-context": "c",
                    "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                    "clusters": [{"name": "k", "cluster": {"server": kubeconfig}}],
                    "users": [{"name": "u", "user": {"token": "t"}}],
                }
            )
        )
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    result = subprocess.run(
        [sys.executable, "-c", "from trainer_controller.cli import main; main()", "run",
         "--no-webhooks", "--config", str(config), "--log-format", "json"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    entry = json.loads(lines[0])
    assert entry["level"] == "ERROR" and message in entry["msg"], entry
