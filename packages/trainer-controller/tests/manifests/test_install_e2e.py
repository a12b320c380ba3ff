"""The standalone overlay and the runtimes installed with kubectl on the stand-in, then run."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
from kube_standin import TRAINER_TYPES, ApiServer
from trainer_controller.operator import Operator, OperatorConfig, load_credentials

MANIFESTS: Final = Path(__file__).resolve().parents[2] / "manifests"
OVERLAY: Final = MANIFESTS / "overlays" / "standalone"
RUNTIMES: Final = MANIFESTS / "runtimes"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed"),
]


def test_installed_overlay_runs_a_trainjob(tmp_path: Path) -> None:
    with ApiServer() as server:
        server.call(
            server.store.register, next(rtype for rtype in TRAINER_TYPES if rtype.kind == "JobSet")
        )
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        for target in (OVERLAY, RUNTIMES):  # as the README says: the controller, then the runtimes
            result = subprocess.run(
                [
                    "kubectl",
                    "--kubeconfig",
                    str(kubeconfig),
                    "apply",
                    "--server-side",
                    "--validate=false",
                    "-k",
                    str(target),
                ],
                capture_output=True,
                text=True,
                timeout=180,
                check=False,
            )
            assert result.returncode == 0, result.stderr
        assert (
            "clustertrainingruntime.trainer.kubeflow.org/torch-distributed serverside-applied"
            in result.stdout
        )

        async def scenario() -> dict[str, Any]:
            stop = asyncio.Event()
            config = OperatorConfig(
                health_port=0,
                metrics_port=0,
                webhook_port=0,
                progress_port=0,
                bind_address="127.0.0.1",
                lease_duration_seconds=1,
                renew_period_seconds=0.2,
            )
            operator = Operator(config, load_credentials(str(kubeconfig)), identity="installed")
            running = asyncio.ensure_future(operator.run(stop))
            await asyncio.wait_for(operator.leading.wait(), timeout=30)
            status, _ = await asyncio.to_thread(
                server.request,
                "POST",
                "/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs",
                {
                    "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "kind": "TrainJob",
                    "metadata": {"name": "job"},
                    "spec": {"runtimeRef": {"name": "torch-distributed"}},
                },
            )
            assert status == 201
            path = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/default/jobsets/job"
            for _ in range(600):  # bounded poll: at most about 30 s
                status, jobset = await asyncio.to_thread(server.request, "GET", path)
                if status == 200:
                    break
                await asyncio.sleep(0.05)
            stop.set()
            await asyncio.wait_for(running, timeout=30)
            return jobset

        jobset = asyncio.run(scenario())
        assert jobset["metadata"]["name"] == "job"
        validating = server.request(
            "GET",
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/trainer-controller-validating",
        )[1]
        assert all(hook["clientConfig"].get("caBundle") for hook in validating["webhooks"])
