"""The trainer reports progress with the env the controller injects (names as upstream's)."""

from __future__ import annotations

from trainer_runtime.plugins import trainer_status
from trainer_sdk.training import progress

UPSTREAM = {
    "url": "KUBEFLOW_TRAINER_SERVER_URL",
    "ca": "KUBEFLOW_TRAINER_SERVER_CA_CERT",
    "token": "KUBEFLOW_TRAINER_SERVER_TOKEN",
}


def test_the_sdk_reads_the_env_the_controller_injects() -> None:
    injected = {
        "url": trainer_status.ENV_STATUS_URL,
        "ca": trainer_status.ENV_CA_CERT,
        "token": trainer_status.ENV_TOKEN,
    }
    read = {
        "url": progress.SERVER_URL_ENV,
        "ca": progress.SERVER_CA_ENV,
        "token": progress.SERVER_TOKEN_ENV,
    }
    assert injected == read == UPSTREAM
