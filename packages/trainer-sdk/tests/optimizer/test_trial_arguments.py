"""A function trainer's call that reads its trial's parameters from the environment."""

from __future__ import annotations

from typing import Any

import pytest
from trainer_sdk.manifests.trainjobs import _call_expression


def fit(**kwargs: Any) -> dict[str, Any]:
    return kwargs


def test_the_call_reads_each_parameter_typed_and_without_func_args(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KUBEFLOW_TRAINER_OPT_LR", "0.25")
    monkeypatch.setenv("KUBEFLOW_TRAINER_OPT_LAYERS", "4")
    call = _call_expression(
        fit,
        None,
        {
            "lr": ("KUBEFLOW_TRAINER_OPT_LR", "float"),
            "layers": ("KUBEFLOW_TRAINER_OPT_LAYERS", "int"),
        },
    )
    assert eval(call, {"fit": fit}) == {"lr": 0.25, "layers": 4}  # the call the command carries


@pytest.mark.parametrize(
    ("env_args", "message"),
    [
        ({"lr": ("KUBEFLOW_TRAINER_OPT_LR", "complex")}, r"env_args\['lr'\]: expected one of"),
        ({"lr": ("lower-case", "float")}, "env_args: expected identifier -> ENV_NAME"),
        ({"not a name": ("X", "float")}, "env_args: expected identifier -> ENV_NAME"),
    ],
)
def test_a_bad_env_argument_is_named(env_args: dict[str, tuple[str, str]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _call_expression(fit, {"epochs": 1}, env_args)
