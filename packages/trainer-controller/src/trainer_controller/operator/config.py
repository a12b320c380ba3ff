"""The operator's configuration: a YAML file, overridden by command-line flags."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

__all__ = ["FEATURE_GATES", "ConfigError", "OperatorConfig", "load_config"]

FEATURE_GATES: Final[dict[str, bool]] = {
    # Serve the progress endpoint that training pods post status.trainerStatus to.
    "TrainJobProgress": True,
}


class ConfigError(ValueError):
    """A configuration value that is missing, of the wrong type or out of range."""


@dataclass(frozen=True)
class OperatorConfig:
    """Everything the operator process can be told; defaults suit an in-cluster Deployment."""

    namespaces: tuple[str, ...] = ()  # empty: cluster-wide
    concurrency: int = 8  # reconcile workers
    # Reconciles read the objects the watches delivered; an entry unrefreshed this long is re-read.
    informer_cache: bool = True
    cache_resync_seconds: float = 300.0
    api_qps: float = 50.0
    api_burst: int = 100
    health_port: int = 8081  # /healthz, /readyz
    metrics_port: int = 8080  # /metrics
    webhook_port: int = 9443
    progress_port: int = 8082
    # Progress reports per TrainJob (429 beyond) and TokenReviews of new tokens; 0: no limit.
    # Reviews are budgeted per (target TrainJob, source address), per source, and in total.
    progress_qps_per_job: float = 1.0
    progress_burst_per_job: int = 10
    progress_review_qps: float = 20.0
    progress_review_burst: int = 40
    progress_review_qps_per_source: float = 5.0
    progress_review_burst_per_source: int = 10
    progress_review_qps_per_job_source: float = 2.0
    progress_review_burst_per_job_source: int = 5
    bind_address: str = "0.0.0.0"
    webhooks: bool = True
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: dict(FEATURE_GATES))
    # High availability: only the holder of this Lease reconciles.
    leader_election: bool = True
    lease_name: str = "trainer-controller"
    lease_namespace: str = "kubeflow-system"
    lease_duration_seconds: float = 15.0
    renew_period_seconds: float = 5.0
    # Certificates: generated and stored in this Secret, or read from cert_dir (cert-manager).
    cert_dir: str = ""
    cert_secret: str = "trainer-controller-webhook-cert"
    service_name: str = "trainer-controller"
    service_namespace: str = "kubeflow-system"
    validating_webhook: str = "trainer-controller-validating"
    mutating_webhook: str = "trainer-controller-mutating"
    # Retries of a failing reconcile: exponential back-off between these bounds.
    backoff_base_seconds: float = 0.05
    backoff_max_seconds: float = 300.0
    log_format: str = "json"  # or "text"
    log_level: str = "INFO"

    def gate(self, name: str) -> bool:
        if name not in FEATURE_GATES:
            raise ConfigError(
                f"featureGates.{name}: unknown feature gate; known: {sorted(FEATURE_GATES)}"
            )
        return bool(self.feature_gates.get(name, FEATURE_GATES[name]))

    def replace(self, **changes: Any) -> OperatorConfig:
        """A copy with the given fields changed (flags over the file); None values are ignored."""
        return dataclasses.replace(
            self, **{key: value for key, value in changes.items() if value is not None}
        )


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest).replace("Qps", "QPS")


_FIELDS: Final = {_camel(item.name): item for item in dataclasses.fields(OperatorConfig)}


def _coerce(key: str, value: Any, default: Any) -> Any:
    expected = type(default)
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{key}: expected a list of strings, got {value!r}")
        return tuple(value)
    if isinstance(default, Mapping):
        if not isinstance(value, Mapping) or not all(
            isinstance(item, bool) for item in value.values()
        ):
            raise ConfigError(f"{key}: expected a mapping of gate names to booleans, got {value!r}")
        unknown = sorted(set(value) - set(FEATURE_GATES))
        if unknown:
            raise ConfigError(
                f"{key}.{unknown[0]}: unknown feature gate; known: {sorted(FEATURE_GATES)}"
            )
        return {**FEATURE_GATES, **value}
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not expected:
        raise ConfigError(f"{key}: expected {expected.__name__}, got {value!r}")
    if expected in (int, float) and value < 0:
        raise ConfigError(f"{key}: must not be negative, got {value!r}")
    return value


def load_config(
    path: Path | str | None = None, base: OperatorConfig | None = None
) -> OperatorConfig:
    """A YAML config file (camelCase keys: ``apiQPS``, ``featureGates``...) over the defaults."""
    config = base or OperatorConfig()
    if path is None:
        return config
    document = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(document, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    changes: dict[str, Any] = {}
    for key, value in document.items():
        if key not in _FIELDS:
            raise ConfigError(f"{key}: unknown setting; known: {', '.join(sorted(_FIELDS))}")
        item = _FIELDS[key]
        changes[item.name] = _coerce(key, value, getattr(config, item.name))
    if changes.get("concurrency", 1) < 1:
        raise ConfigError("concurrency: must be at least 1")
    return config.replace(**changes)
