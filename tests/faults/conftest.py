"""The operator as its own process against the API stand-in, serving every endpoint on loopback."""

from __future__ import annotations

import base64
import contextlib
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kube_standin import TRAINER_TYPES, ApiServer
from trainer_runtime import builtin_runtimes

CERT_SECRET = "/api/v1/namespaces/kubeflow-system/secrets/trainer-controller-webhook-cert"
START_TIMEOUT_S = 120.0  # imports and certificate generation on a loaded 2-core machine


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _webhook_configuration(kind: str, name: str) -> dict[str, object]:
    reference = {"name": "trainer-controller", "namespace": "kubeflow-system", "path": "/x"}
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "trainjob.trainer.kubeflow.org",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"service": reference},
            }
        ],
    }


@dataclass
class OperatorProcess:
    """A running ``trainer-controller run``: its ports, the stand-in, a context trusting its CA."""

    server: ApiServer
    health: int
    webhooks: int
    progress: int
    tls: ssl.SSLContext


def _wait_ready(process: subprocess.Popen[bytes], health: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the operator exited: {log.read_text()[-3000:]}")
        url = f"http://127.0.0.1:{health}/readyz"
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=5) as answer:
            if answer.status == 200:
                return
        time.sleep(0.1)  # polling interval; the deadline bounds the wait
    raise AssertionError(f"the operator was not ready in {START_TIMEOUT_S} s: {log.read_text()}")


@pytest.fixture(scope="module")
def operator_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    directory = tmp_path_factory.mktemp("operator")
    with ApiServer() as server:
        for resource in TRAINER_TYPES:
            server.call(server.store.register, resource)
        server.request("POST", "/api/v1/namespaces", {"metadata": {"name": "kubeflow-system"}})
        for runtime in builtin_runtimes().values():
            path = "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"
            assert server.request("POST", path, runtime.to_dict())[0] == 201
        for kind, name in (
            ("ValidatingWebhookConfiguration", "trainer-controller-validating"),
            ("MutatingWebhookConfiguration", "trainer-controller-mutating"),
        ):
            path = f"/apis/admissionregistration.k8s.io/v1/{kind.lower()}s"
            assert server.request("POST", path, _webhook_configuration(kind, name))[0] == 201
        kubeconfig = server.write_kubeconfig(directory / "kubeconfig")
        config = directory / "config.yaml"
        config.write_text("bindAddress: 127.0.0.1\nprogressQPSPerJob: 0\nlogFormat: text\n")
        ports = {name: _free_port() for name in ("health", "metrics", "webhook", "progress")}
        log = directory / "operator.log"
        command = [
            sys.executable,
            "-c",
            "from trainer_controller.cli import main; main()",
            "run",
            "--kubeconfig",
            str(kubeconfig),
            "--config",
            str(config),
            "--no-leader-election",
            *(arg for name, port in ports.items() for arg in (f"--{name}-port", str(port))),
        ]
        with log.open("wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        try:
            _wait_ready(process, ports["health"], log)
            status, secret = server.request("GET", CERT_SECRET)
            assert status == 200, secret
            ca = directory / "ca.crt"
            ca.write_bytes(base64.b64decode(secret["data"]["ca.crt"]))
            yield OperatorProcess(
                server,
                ports["health"],
                ports["webhook"],
                ports["progress"],
                ssl.create_default_context(cafile=str(ca)),
            )
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
