"""TrainerStatus plugin: progress env, projected token and CA volume, CA ConfigMap."""

from __future__ import annotations

from runtime_cases import (
    FIXED_KEYPAIR,
    by_kind,
    container_of,
    env_of,
    make_job,
    render_of,
    runtime_doc,
)
from trainer_runtime import Settings, StatusServer

SERVER = StatusServer(
    url="https://trainer.example.svc:10443", ca_cert="-----BEGIN CERTIFICATE-----\nx\n"
)


def test_no_status_server_means_nothing_added() -> None:
    objects = render_of(
        make_job(),
        runtime_doc("torch-distributed"),
        settings=Settings(ssh_keypair=lambda: FIXED_KEYPAIR),
    )
    node = container_of(by_kind(objects, "JobSet")[0], "node")
    assert not any(name.startswith("KUBEFLOW_TRAINER") for name in env_of(node))
    assert [o["metadata"]["name"] for o in by_kind(objects, "ConfigMap")] == [
        "alpha-runtime-snapshot"
    ]


def test_status_server_env_volume_and_config_map() -> None:
    objects = render_of(
        make_job(), runtime_doc("torch-distributed"), settings=Settings(status_server=SERVER)
    )
    jobset = by_kind(objects, "JobSet")[0]
    node = container_of(jobset, "node")
    env = env_of(node)
    assert env["KUBEFLOW_TRAINER_SERVER_URL"] == (
        "https://trainer.example.svc:10443/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/alpha/status"
    )
    assert env["KUBEFLOW_TRAINER_SERVER_CA_CERT"] == "/var/run/secrets/kubeflow/trainer/ca.crt"
    assert env["KUBEFLOW_TRAINER_SERVER_TOKEN"] == "/var/run/secrets/kubeflow/trainer/token"
    assert list(env)[-3:] == [
        "KUBEFLOW_TRAINER_SERVER_URL",
        "KUBEFLOW_TRAINER_SERVER_CA_CERT",
        "KUBEFLOW_TRAINER_SERVER_TOKEN",
    ]
    assert node["volumeMounts"] == [
        {
            "name": "kubeflow-trainer-token",
            "mountPath": "/var/run/secrets/kubeflow/trainer",
            "readOnly": True,
        }
    ]
    (volume,) = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
        "volumes"
    ]
    sources = volume["projected"]["sources"]
    assert (
        sources[0]["serviceAccountToken"]["audience"]
        == "trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/alpha/status"
    )
    assert sources[1]["configMap"]["name"] == "alpha-tls-config"
    tls = next(
        o for o in by_kind(objects, "ConfigMap") if o["metadata"]["name"] == "alpha-tls-config"
    )
    assert tls["data"] == {"ca.crt": SERVER.ca_cert}
