"""The engine registry and the adapters' submit sides: pure, and enough to render a TrainJob."""

from __future__ import annotations

import subprocess
import sys

import pytest
from trainer_sdk import TorchTuneConfig, TRLConfig
from trainer_sdk.training.engines import ENGINES, engine_for_config, engine_named


def test_the_client_side_imports_no_engine_no_torch_no_api_models() -> None:
    probe = (
        "import sys, trainer_sdk.training.engines, trainer_sdk.status.outputs\n"
        "heavy = ('torch', 'transformers', 'trl', 'peft', 'torchtune', 'datasets', 'pydantic')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.stdout == "[]\n", result.stderr


def test_each_engine_is_found_by_its_label_and_its_config() -> None:
    assert [engine.name for engine in ENGINES] == ["torchtune", "trl"]
    assert engine_named("trl") is engine_for_config(TRLConfig())
    assert engine_named("torchtune") is engine_for_config(TorchTuneConfig())
    assert engine_named("torch") is None


def test_a_config_no_engine_takes_is_refused_naming_the_ones_there_are() -> None:
    with pytest.raises(ValueError, match="expected TorchTuneConfig or TRLConfig, got dict"):
        engine_for_config({"learning_rate": 1})
