"""The Kubernetes backend over loopback against a minimal API server, and pods seen as steps."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest
from kubernetes import client
from trainer_sdk import (
    CustomTrainerContainer,
    JobNotFoundError,
    KubernetesBackendConfig,
    Labels,
    TrainerClient,
)
from trainer_sdk.backends.kubernetes.backend import pod_view

TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainjobs"
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {
        "name": "torch-distributed",
        "labels": {"trainer.kubeflow.org/framework": "torch"},
    },
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {"spec": {"replicatedJobs": []}},
    },
}


class FakeApi(BaseHTTPRequestHandler):
    """Serves runtimes, records created TrainJobs, answers 404 for anything else."""

    created: ClassVar[list[dict[str, Any]]] = []

    def _reply(self, code: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.startswith("/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes"):
            self._reply(200, {"items": [RUNTIME]})
        elif self.path.startswith(
            "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team/trainingruntimes"
        ):
            self._reply(200, {"items": []})
        else:
            self._reply(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

    def do_DELETE(self) -> None:
        self._reply(404, {"kind": "Status", "code": 404, "reason": "NotFound"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeApi.created.append({"path": self.path, "body": body})
        self._reply(201, body)

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def trainer_client() -> Iterator[TrainerClient]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    configuration = client.Configuration()
    configuration.host = f"http://127.0.0.1:{server.server_address[1]}"
    FakeApi.created = []
    try:
        yield TrainerClient(
            KubernetesBackendConfig(namespace="team", client_configuration=configuration)
        )
    finally:
        server.shutdown()
        thread.join(timeout=5)


def test_train_creates_the_trainjob_custom_resource(trainer_client: TrainerClient) -> None:
    name = trainer_client.train(
        trainer=CustomTrainerContainer(image="me/train:1", num_nodes=2),
        options=[Labels({"team": "a"})],
    )
    [request] = FakeApi.created
    assert request["path"] == TRAINJOBS
    body = request["body"]
    assert body["metadata"] == {"name": name, "namespace": "team", "labels": {"team": "a"}}
    assert body["spec"]["runtimeRef"]["name"] == "torch-distributed"
    assert body["spec"]["trainer"] == {"numNodes": 2, "image": "me/train:1"}


def test_runtimes_come_from_the_cluster(trainer_client: TrainerClient) -> None:
    assert [runtime.name for runtime in trainer_client.list_runtimes()] == ["torch-distributed"]


@pytest.mark.parametrize("call", ["get_job", "delete_job"])
def test_missing_job_is_job_not_found(trainer_client: TrainerClient, call: str) -> None:
    with pytest.raises(JobNotFoundError, match="'nope' not found in namespace team"):
        getattr(trainer_client, call)("nope")


def test_pod_view_names_steps_like_upstream() -> None:
    pod = {
        "metadata": {
            "name": "j-node-0-1",
            "labels": {
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "jobset.sigs.k8s.io/job-index": "0",
            },
            "annotations": {"batch.kubernetes.io/job-completion-index": "1"},
        },
        "spec": {
            "containers": [
                {
                    "name": "node",
                    "resources": {"limits": {"cpu": "2"}},
                    "env": [{"name": "PET_NPROC_PER_NODE", "value": "2"}],
                }
            ]
        },
        "status": {"phase": "Running"},
    }
    view = pod_view(pod, has_launcher=False)
    assert view is not None
    assert (view.step, view.phase, view.device, view.device_count) == (
        "node-1",
        "Running",
        "cpu",
        "2",
    )
    assert (
        pod_view(
            {"metadata": {"labels": {"jobset.sigs.k8s.io/replicatedjob-name": "other"}}}, False
        )
        is None
    )
