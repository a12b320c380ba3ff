"""The configuration file and its errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from trainer_controller.operator import ConfigError, OperatorConfig, load_config


def test_file_overrides_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "namespaces: [a, b]\nconcurrency: 3\napiQPS: 20\nfeatureGates: {TrainJobProgress: false}\n"
    )
    config = load_config(path)
    assert (config.namespaces, config.concurrency, config.api_qps) == (("a", "b"), 3, 20.0)
    assert config.gate("TrainJobProgress") is False


def test_flags_override_file_and_none_keeps_value() -> None:
    config = OperatorConfig(concurrency=3).replace(concurrency=None, webhooks=False)
    assert (config.concurrency, config.webhooks) == (3, False)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("concurency: 3\n", "concurency: unknown setting", id="typo"),
        pytest.param("concurrency: three\n", "concurrency: expected int", id="wrong-type"),
        pytest.param("concurrency: 0\n", "concurrency: must be at least 1", id="zero-workers"),
        pytest.param("apiQPS: -1\n", "apiQPS: must not be negative", id="negative"),
        pytest.param("namespaces: a\n", "namespaces: expected a list of strings", id="not-a-list"),
        pytest.param(
            "featureGates: {Nope: true}\n",
            "featureGates.Nope: unknown feature gate",
            id="unknown-gate",
        ),
        pytest.param("- a\n", "expected a mapping at the top level", id="not-a-mapping"),
    ],
)
def test_bad_config_names_the_setting(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)
