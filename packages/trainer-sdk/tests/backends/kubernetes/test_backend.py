"""The Kubernetes backend: the real ``kubernetes`` client against the operator's API stand-in."""

from __future__ import annotations

import base64
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from trainer_sdk import (
    DPO,
    GRPO,
    KTO,
    BuiltinTrainer,
    CustomTrainer,
    Distillation,
    HuggingFaceDatasetInitializer,
    HuggingFaceModelInitializer,
    Initializer,
    InvalidTrainJobError,
    JobNotFoundError,
    KubernetesBackendConfig,
    Labels,
    LengthReward,
    LoraConfig,
    RuntimeKind,
    RuntimeNotFoundError,
    TrainerClient,
    TRLConfig,
    constants,
)
from trainer_sdk.backends.kubernetes.backend import admission_warnings, pod_view

testing = pytest.importorskip("kube_standin", reason="needs kube-standin")
REPO_ROOT = Path(__file__).resolve().parents[5]
CRDS = REPO_ROOT / "packages" / "trainer-api" / "manifests" / "crds"
TRAINJOBS = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs"


def embedded_code(script: str) -> str:
    """The Python files a trainer command's script writes (base64 payloads), decoded."""
    payloads = re.findall(r"^write \S+ '([A-Za-z0-9+/=]*)'", script, re.M)
    return "\n".join(base64.b64decode(payload).decode() for payload in payloads)


def train_function() -> None:
    print("training")


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    """One stand-in for the module (loading the CRDs is slow); each test gets its own namespace."""
    import trainer_runtime

    with testing.ApiServer() as running:
        for path in sorted(CRDS.glob("trainer.kubeflow.org_*.yaml")):
            crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            for rtype in testing.types_from_crd(crd):
                running.call(running.store.register, rtype)
        runtime = trainer_runtime.builtin_runtimes()["torch-distributed"].to_dict()
        status, body = running.request(
            "POST", "/apis/trainer.kubeflow.org/v1alpha1/clustertrainingruntimes", runtime
        )
        assert status == 201, body
        yield running


@pytest.fixture
def namespace(server: Any, request: pytest.FixtureRequest) -> str:
    name = f"team-{len(server.store.types())}-{abs(hash(request.node.name)) % 10**8}"
    status, body = server.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    assert status == 201, body
    return name


@pytest.fixture
def client(server: Any, namespace: str, tmp_path: Path) -> TrainerClient:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig", namespace=namespace)
    return TrainerClient(KubernetesBackendConfig(config_file=str(kubeconfig)))


def add_training_runtime(server: Any, namespace: str, builtin: str) -> None:
    """The built-in runtime ``builtin`` as a TrainingRuntime of ``namespace``."""
    import trainer_runtime

    runtime = trainer_runtime.builtin_runtimes()[builtin].to_dict()
    runtime["kind"] = constants.TRAINING_RUNTIME_KIND
    runtime["metadata"]["namespace"] = namespace
    path = f"/apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainingruntimes"
    status, body = server.request("POST", path, runtime)
    assert status == 201, body


def add_pod(server: Any, namespace: str, job: str, index: int, phase: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{job}-node-0-{index}",
            "labels": {
                constants.JOBSET_NAME_LABEL: job,
                constants.JOBSET_RJOB_NAME_LABEL: "node",
                "jobset.sigs.k8s.io/job-index": "0",
            },
            "annotations": {constants.JOB_INDEX_LABEL: str(index)},
        },
        "spec": {"containers": [{"name": "node", "image": "i"}]},
    }
    path = f"/api/v1/namespaces/{namespace}/pods"
    assert server.request("POST", path, pod)[0] == 201
    status, body = server.request(
        "PATCH",
        f"{path}/{job}-node-0-{index}/status",
        {"status": {"phase": phase}},
        "application/merge-patch+json",
    )
    assert status == 200, body


def test_train_creates_the_upstream_shaped_custom_resource(
    client: TrainerClient, server: Any, namespace: str
) -> None:
    name = client.train(
        trainer=CustomTrainer(func=train_function, num_nodes=2), options=[Labels({"team": "a"})]
    )
    status, stored = server.request("GET", f"{TRAINJOBS.format(namespace=namespace)}/{name}")
    assert status == 200
    assert stored["metadata"]["labels"] == {"team": "a"}
    assert stored["spec"]["runtimeRef"]["name"] == "torch-distributed"
    assert stored["spec"]["trainer"]["numNodes"] == 2
    assert "train_function()" in embedded_code(stored["spec"]["trainer"]["command"][2])
    job = client.get_job(name)
    assert (job.status, job.runtime.name, job.steps) == ("Created", "torch-distributed", [])


def test_pods_become_steps_and_conditions_the_status(
    client: TrainerClient, server: Any, namespace: str
) -> None:
    name = client.train(trainer=CustomTrainer(func=train_function, num_nodes=2))
    add_pod(server, namespace, name, 0, "Running")
    add_pod(server, namespace, name, 1, "Running")
    job = client.get_job(name)
    assert [(step.name, step.status) for step in job.steps] == [
        ("node-0", "Running"),
        ("node-1", "Running"),
    ]
    assert job.status == constants.TRAINJOB_RUNNING
    condition = {
        "type": "Complete",
        "status": "True",
        "reason": "JobSetCompleted",
        "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }
    status, body = server.request(
        "PATCH",
        f"{TRAINJOBS.format(namespace=namespace)}/{name}/status",
        {"status": {"conditions": [condition]}},
        "application/merge-patch+json",
    )
    assert status == 200, body
    done = client.wait_for_job_status(name, timeout=10, polling_interval=1)
    assert done.status == constants.TRAINJOB_COMPLETE
    assert [job.name for job in client.list_jobs()] == [name]


def test_delete_and_missing_jobs(client: TrainerClient, namespace: str) -> None:
    name = client.train(trainer=CustomTrainer(func=train_function))
    client.delete_job(name)
    for call in (client.get_job, client.delete_job):
        with pytest.raises(JobNotFoundError, match=f"'{name}' not found in namespace {namespace}"):
            call(name)


def test_unknown_runtime_lists_the_known_ones(client: TrainerClient) -> None:
    assert [runtime.name for runtime in client.list_runtimes()] == ["torch-distributed"]
    with pytest.raises(RuntimeNotFoundError, match="available runtimes: torch-distributed"):
        client.get_runtime("nope")


def test_pod_view_counts_processes_per_node() -> None:
    pod = {
        "metadata": {
            "name": "j-node-0-1",
            "labels": {
                constants.JOBSET_RJOB_NAME_LABEL: "node",
                "jobset.sigs.k8s.io/job-index": "0",
            },
            "annotations": {constants.JOB_INDEX_LABEL: "1"},
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
    other = {"metadata": {"labels": {constants.JOBSET_RJOB_NAME_LABEL: "other"}}}
    assert pod_view(other, has_launcher=False) is None


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        pytest.param(None, [], id="no-header"),
        pytest.param(
            '299 - "Referenced ClusterTrainingRuntime \\"old\\" is deprecated, see policy"',
            ['Referenced ClusterTrainingRuntime "old" is deprecated, see policy'],
            id="quoted-text-with-comma",
        ),
        pytest.param(
            '299 - "first", 299 - "second"', ["first", "second"], id="two-warnings-joined"
        ),
    ],
)
def test_admission_warnings_from_the_warning_header(
    header: str | None, expected: list[str]
) -> None:
    assert admission_warnings(header) == expected


def test_train_takes_a_runtime_name_and_honours_a_training_runtime(
    client: TrainerClient, server: Any, namespace: str
) -> None:
    first = client.train(runtime="torch-distributed", trainer=CustomTrainer(func=train_function))
    assert client.get_job(first).runtime.kind is RuntimeKind.CLUSTER_TRAINING_RUNTIME
    add_training_runtime(server, namespace, "torch-distributed")
    shadowing = client.get_runtime("torch-distributed")
    assert shadowing.kind is RuntimeKind.TRAINING_RUNTIME
    second = client.train(runtime=shadowing, trainer=CustomTrainer(func=train_function))
    status, stored = server.request("GET", f"{TRAINJOBS.format(namespace=namespace)}/{second}")
    assert status == 200
    assert stored["spec"]["runtimeRef"]["kind"] == constants.TRAINING_RUNTIME_KIND
    assert client.get_job(second).runtime.kind is RuntimeKind.TRAINING_RUNTIME
    assert client.get_job(first).runtime.kind is RuntimeKind.CLUSTER_TRAINING_RUNTIME


def test_wait_calls_the_callbacks_with_each_poll(client: TrainerClient) -> None:
    name = client.train(trainer=CustomTrainer(func=train_function))
    seen: list[str] = []
    with pytest.raises(TimeoutError):
        client.wait_for_job_status(
            name, timeout=4, polling_interval=1, callbacks=[lambda job: seen.append(job.status)]
        )
    assert len(seen) >= 2 and set(seen) == {"Created"}, "one call per interval of the wait"


def test_runtime_packages_are_printed_by_a_one_node_job_that_is_then_deleted(
    client: TrainerClient,
    server: Any,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The stand-in has no controller or kubelet: a thread completes the job, and the pod's log
    (the kubelet's part) is the one thing replaced."""
    created: list[dict[str, Any]] = []
    done = threading.Event()

    def controller() -> None:
        while not done.is_set():
            _, listed = server.request("GET", TRAINJOBS.format(namespace=namespace))
            for job in listed.get("items", []):
                if job.get("status"):
                    continue
                created.append(job)
                name = job["metadata"]["name"]
                add_pod(server, namespace, name, 0, "Succeeded")
                condition = {"type": "Complete", "status": "True", "reason": "JobSetCompleted"}
                server.request(
                    "PATCH",
                    f"{TRAINJOBS.format(namespace=namespace)}/{name}/status",
                    {
                        "status": {
                            "conditions": [
                                {
                                    **condition,
                                    "message": "",
                                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                                }
                            ]
                        }
                    },
                    "application/merge-patch+json",
                )
            done.wait(0.05)

    def pod_log(pod: str, namespace: str, container: str, **_: Any) -> str:
        return f"Python: 3.11.9\n{pod} {container} torch 2.7.1"

    monkeypatch.setattr(client.backend.core, "read_namespaced_pod_log", pod_log)  # type: ignore[attr-defined]
    thread = threading.Thread(target=controller)
    thread.start()
    try:
        assert client.get_runtime_packages(client.get_runtime("torch-distributed")) is None
    finally:
        done.set()
        thread.join(timeout=10)
    [job] = created
    trainer = job["spec"]["trainer"]
    assert trainer["numNodes"] == 1
    assert trainer["resourcesPerNode"] == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert "print_packages()" in embedded_code(trainer["command"][2])
    name = job["metadata"]["name"]
    assert capsys.readouterr().out == f"Python: 3.11.9\n{name}-node-0-0 node torch 2.7.1\n"
    with pytest.raises(JobNotFoundError):
        client.get_job(name)


def test_the_fine_tuning_guides_call_against_a_cluster(
    client: TrainerClient, server: Any, namespace: str, tmp_path: Path
) -> None:
    """The guide's TRL call on trl-gpu: the TrainJob carries the engine's arguments and the
    initializers' URIs, the SDK names the output's claim, and a path on this machine is refused
    naming its field."""
    add_training_runtime(server, namespace, "trl-gpu")
    trainer = BuiltinTrainer(TRLConfig(num_nodes=2, epochs=1, peft_config=LoraConfig(lora_rank=16)))
    name = client.train(
        runtime="trl-gpu",
        initializer=Initializer(
            model=HuggingFaceModelInitializer("pvc://models/qwen2.5-0.5b"),
            dataset=HuggingFaceDatasetInitializer("hf://trl-lib/Capybara"),
        ),
        trainer=trainer,
    )
    status, stored = server.request("GET", f"{TRAINJOBS.format(namespace=namespace)}/{name}")
    assert status == 200
    assert stored["spec"]["trainer"]["numNodes"] == 2
    assert {"--num_train_epochs=1", "--use_peft=true", "--lora_r=16"} <= set(
        stored["spec"]["trainer"]["args"]
    )
    initializers = stored["spec"]["initializer"]
    assert initializers["model"]["storageUri"] == "pvc://models/qwen2.5-0.5b"
    assert initializers["dataset"] == {"storageUri": "hf://trl-lib/Capybara"}
    assert client.get_job(name).output == f"pvc://initializer-{name}/output"
    (tmp_path / "data.jsonl").write_text("{}\n")
    local = Initializer(dataset=HuggingFaceDatasetInitializer(str(tmp_path / "data.jsonl")))
    with pytest.raises(
        InvalidTrainJobError, match=r"spec\.initializer\.dataset\.storageUri: file://"
    ):
        client.train(runtime="trl-gpu", initializer=local, trainer=trainer)


@pytest.mark.parametrize(
    ("method", "name"),
    [
        pytest.param(DPO(beta=0.1), "dpo", id="dpo"),
        pytest.param(KTO(), "kto", id="kto"),
        pytest.param(GRPO(rewards=[LengthReward(target=8)]), "grpo", id="grpo"),
        pytest.param(
            Distillation(teacher=HuggingFaceModelInitializer("hf://org/teacher")),
            "distillation",
            id="distillation",
        ),
    ],
)
def test_each_blueprint_runs_on_the_cluster_runtime(
    client: TrainerClient, server: Any, namespace: str, method: Any, name: str
) -> None:
    """Every TRL method is a TrainJob of trl-gpu: its arguments after the runtime's command."""
    add_training_runtime(server, namespace, "trl-gpu")
    initializer = Initializer(
        model=HuggingFaceModelInitializer("hf://org/model"),
        dataset=HuggingFaceDatasetInitializer("hf://org/data"),
    )
    config = TRLConfig(method=method, num_nodes=2, max_steps=10)
    job = client.train(runtime="trl-gpu", initializer=initializer, trainer=BuiltinTrainer(config))
    status, stored = server.request("GET", f"{TRAINJOBS.format(namespace=namespace)}/{job}")
    assert status == 200
    assert stored["spec"]["runtimeRef"]["name"] == "trl-gpu"
    assert {f"--method={name}", "--max_steps=10"} <= set(stored["spec"]["trainer"]["args"])


def test_a_teacher_on_this_machine_is_refused_for_a_cluster(
    client: TrainerClient, server: Any, namespace: str, tmp_path: Path
) -> None:
    add_training_runtime(server, namespace, "trl-gpu")
    teacher = Distillation(teacher=HuggingFaceModelInitializer(str(tmp_path)))
    initializer = Initializer(model=HuggingFaceModelInitializer("hf://org/model"))
    trainer = BuiltinTrainer(TRLConfig(method=teacher))
    with pytest.raises(
        InvalidTrainJobError, match=rf"spec\.trainer\.args\[\d+\]: {tmp_path.as_uri()} is a path"
    ):
        client.train(runtime="trl-gpu", initializer=initializer, trainer=trainer)
