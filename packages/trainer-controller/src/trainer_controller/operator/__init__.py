"""The Kubernetes operator: informers feeding one level-triggered reconcile that calls ``build``,
admission webhooks, the progress endpoint, Lease-based leadership, probes and metrics.
"""

from trainer_controller.operator.command import run
from trainer_controller.operator.config import ConfigError, OperatorConfig, load_config
from trainer_controller.operator.credentials import Credentials, CredentialsError, load_credentials
from trainer_controller.operator.runner import Operator

__all__ = [
    "ConfigError",
    "Credentials",
    "CredentialsError",
    "Operator",
    "OperatorConfig",
    "load_config",
    "load_credentials",
    "run",
]
