"""TrainerStatus: lets trainers report progress to the controller's status server.

When ``Settings.status_server`` is set, every container of the trainer pod set gets the server
URL for this job, the CA certificate path and the service-account token path; the token
(audience bound to this job) and the CA certificate come from one projected volume, the CA
from the ConfigMap ``<job>-tls-config`` this plugin builds.
"""

from __future__ import annotations

from typing import Any, Final

import trainer_api
from trainer_api import TrainJob

from trainer_runtime import manifests, podspecs
from trainer_runtime.info import RuntimeInfo
from trainer_runtime.plan import Observed

__all__ = ["TrainerStatus", "status_path", "token_audience"]

ENV_STATUS_URL: Final = "KUBEFLOW_TRAINER_SERVER_URL"
ENV_CA_CERT: Final = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
ENV_TOKEN: Final = "KUBEFLOW_TRAINER_SERVER_TOKEN"
MOUNT_PATH: Final = "/var/run/secrets/kubeflow/trainer"
VOLUME_NAME: Final = "kubeflow-trainer-token"
CA_CERT_KEY: Final = "ca.crt"
TOKEN_FILE: Final = "token"
TOKEN_EXPIRATION_SECONDS: Final = 3600
TLS_CONFIG_MAP_SUFFIX: Final = "-tls-config"


def status_path(namespace: str | None, name: str) -> str:
    """The status server path a trainer reports this job's progress to."""
    namespace = namespace or "default"
    return f"/apis/{trainer_api.TRAINER_API_VERSION}/namespaces/{namespace}/trainjobs/{name}/status"


def token_audience(namespace: str | None, name: str) -> str:
    """The audience of the projected token: valid for this job's status only.

    Upstream's (``trainer.kubeflow.org/v1alpha1/namespaces/NS/trainjobs/NAME/status``), so a
    trainer built for upstream's status server works against ours and the other way round.
    """
    namespace = namespace or "default"
    return f"{trainer_api.TRAINER_API_VERSION}/namespaces/{namespace}/trainjobs/{name}/status"


class TrainerStatus:
    """Progress-reporting env and volumes on the trainer; the CA ConfigMap."""

    name = "TrainerStatus"

    def enforce_pod_spec(self, info: RuntimeInfo, job: TrainJob) -> None:
        """Env, mount and projected volume on the trainer pod set."""
        server = info.settings.status_server
        trainer = info.trainer_pod_set()
        if server is None or trainer is None:
            return
        env = [
            podspecs.value_env(
                ENV_STATUS_URL, server.url.rstrip("/") + status_path(info.namespace, info.job_name)
            ),
            podspecs.value_env(ENV_CA_CERT, f"{MOUNT_PATH}/{CA_CERT_KEY}"),
            podspecs.value_env(ENV_TOKEN, f"{MOUNT_PATH}/{TOKEN_FILE}"),
        ]
        for container in trainer.containers:
            podspecs.upsert_env(container, env)
            podspecs.upsert_volume_mount(
                container, {"name": VOLUME_NAME, "mountPath": MOUNT_PATH, "readOnly": True}
            )
        podspecs.upsert_volume(
            trainer.pod_spec,
            {
                "name": VOLUME_NAME,
                "projected": {
                    "sources": [
                        {
                            "serviceAccountToken": {
                                "audience": token_audience(info.namespace, info.job_name),
                                "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                                "path": TOKEN_FILE,
                            }
                        },
                        {
                            "configMap": {
                                "name": info.job_name + TLS_CONFIG_MAP_SUFFIX,
                                "items": [{"key": CA_CERT_KEY, "path": CA_CERT_KEY}],
                            }
                        },
                    ]
                },
            },
        )

    def build(self, info: RuntimeInfo, job: TrainJob, observed: Observed) -> list[dict[str, Any]]:
        """The ConfigMap holding the status server's CA certificate."""
        server = info.settings.status_server
        if server is None:
            return []
        return [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": manifests.owned_metadata(job, info.job_name + TLS_CONFIG_MAP_SUFFIX),
                "data": {CA_CERT_KEY: server.ca_cert},
            }
        ]
